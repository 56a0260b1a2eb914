package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// Partitions cut chosen processes off from chosen loopback ports, both
// ways, with iptables, while every other process still reaches them: a
// network partition between two hosts, on one machine.
//
// A process is named by its group id: the test starts it with that gid
// (exec.Cmd's SysProcAttr.Credential; the uid stays root), and a mangle rule
// marks every connection a socket of that gid opens (CONNMARK). A cut drops,
// in the filter table's OUTPUT chain (every loopback packet passes it, in
// either direction), the packets of marked connections to or from the port:
// requests in flight are lost, replies too, and the connections stay open,
// as across a partition that drops packets. Healing removes the rule, and
// TCP's retransmissions deliver what was held back.
//
// The rules live in chains of their own (Chain), installed by NewPartitions
// and removed by Close; a chain left by an interrupted run is removed first.
// It needs root and iptables (Debian's package of that name).
type Partitions struct {
	mu   sync.Mutex
	cuts map[cut]bool
}

type cut struct {
	gid  uint32
	port int
}

// Chain is the name of the iptables chains of Partitions.
const Chain = "FLASHSALE-CHAOS"

// NewPartitions installs the chains and marks the connections of gids.
// Processes must be started after it, so that their connections are marked.
func NewPartitions(gids ...uint32) (*Partitions, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("partitions need root (iptables)")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		return nil, fmt.Errorf("partitions need iptables: %w", err)
	}
	removeChains()
	steps := [][]string{
		{"-t", "mangle", "-N", Chain}, {"-t", "mangle", "-A", "OUTPUT", "-j", Chain},
		{"-N", Chain}, {"-A", "OUTPUT", "-j", Chain},
	}
	for _, g := range gids {
		id := strconv.FormatUint(uint64(g), 10)
		steps = append(steps, []string{"-t", "mangle", "-A", Chain, "-m", "owner", "--gid-owner", id, "-j", "CONNMARK", "--set-mark", id})
	}
	for _, s := range steps {
		if err := iptables(s...); err != nil {
			removeChains()
			return nil, err
		}
	}
	return &Partitions{cuts: map[cut]bool{}}, nil
}

// Cut drops the packets between the process of gid and port, both ways.
func (p *Partitions) Cut(gid uint32, port int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := cut{gid, port}
	if p.cuts[c] {
		return nil
	}
	if err := iptables(append([]string{"-A", Chain}, c.rule()...)...); err != nil {
		return err
	}
	p.cuts[c] = true
	return nil
}

// Heal ends the cut between gid and port.
func (p *Partitions) Heal(gid uint32, port int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := cut{gid, port}
	if !p.cuts[c] {
		return nil
	}
	if err := iptables(append([]string{"-D", Chain}, c.rule()...)...); err != nil {
		return err
	}
	delete(p.cuts, c)
	return nil
}

// Close heals every cut and removes the chains.
func (p *Partitions) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	removeChains()
	clear(p.cuts)
}

func (c cut) rule() []string {
	return []string{"-p", "tcp", "-m", "connmark", "--mark", strconv.FormatUint(uint64(c.gid), 10),
		"-m", "multiport", "--ports", strconv.Itoa(c.port), "-j", "DROP"}
}

// removeChains removes the chains and their jumps, ignoring what is not
// there.
func removeChains() {
	for _, table := range []string{"mangle", "filter"} {
		for iptables("-t", table, "-D", "OUTPUT", "-j", Chain) == nil {
		}
		_ = iptables("-t", table, "-F", Chain)
		_ = iptables("-t", table, "-X", Chain)
	}
}

func iptables(args ...string) error {
	out, err := exec.Command("iptables", append([]string{"-w", "5"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
