// Package lab puts the processes of the local stack on hosts of their own,
// on one machine: every host has a link of its own to every service it
// reaches (gateway 1 to master A apart from gateway 2 to master A, a
// replica to its master, a node to another's cluster bus), and a clock of
// its own. Production spreads these over hosts and zones: links of
// 0.2-2 ms with jitter, stalls and one-way cuts, clocks that disagree.
//
// A host is a group id. The lab starts (or the test starts, with
// exec.Cmd's SysProcAttr) each process under its host's gid, and an
// iptables rule in the nat table's OUTPUT chain sends every connection a
// socket of that gid opens to a service's port through the Toxiproxy proxy
// of that link instead (DNAT, matched by the owner's gid, on loopback).
// The processes keep the addresses they know (the Redis Cluster announces
// 127.0.0.1:<port>); nothing in them knows of the lab. Toxiproxy runs in the
// test's process, whose own connections no rule matches.
//
// A link takes one-way latency with jitter (to the microsecond: toxic
// "delay_us", registered here), a bandwidth cap, and a stall one way or
// both (Toxiproxy's timeout toxic with no timeout: the bytes wait, as
// behind a cut TCP retransmits them once it heals). TCP loses nothing, so
// a lossy link is latency spikes and jitter.
//
// A host's clock: a Go process (gateway, writer) started with
// FLASHSALE_CLOCK_OFFSET takes its offset through its admin listener
// (package sharding/clock); a Redis node runs the lab's redis-server
// (deploy/stack/stack.sh lab-redis: built from Debian's source with libc
// malloc, which libfaketime can run) under libfaketime, with a timestamp
// file the lab rewrites.
//
// It needs root, iptables and the lab's redis-server; without them the test
// is skipped, or fails under FLASHSALE_REQUIRE_STACK=1 (testenv.Missing).
package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"flashsale/deploy/testenv"
)

// Chain is the prefix of a lab's chain in iptables' nat table: each lab
// holds a slot (Slots of them), its chain Chain-<slot> and its hosts' group
// ids from firstGid + 100 * slot, so that labs of tests run side by side
// (make test's packages in parallel) never share a rule.
const Chain = "FLASHSALE-LAB"

// Slots is how many labs can run at once on the machine.
const Slots = 8

// firstGid is the group id of slot 0's first host.
const firstGid = 4301

// Lab is one run's hosts, links and Redis Cluster.
type Lab struct {
	t     testing.TB
	slot  int
	chain string
	lock  *os.File // holds the slot (flock) until the lab is done
	tox   *toxiproxy.ApiServer
	mu    sync.Mutex
	hosts []*Host
	links map[linkKey]*Link
	// Redis is the lab's cluster, once StartRedis ran.
	Redis *Cluster
}

type linkKey struct {
	from *Host
	to   Endpoint
}

// Host is one host of the lab: the processes of one group id.
type Host struct {
	Name string
	Gid  uint32
	lab  *Lab
	// Admin is the admin listener of the Go process on the host (its clock's
	// knob), set by the test that starts it.
	Admin string
	// clockFile is libfaketime's timestamp file of a Redis node's host.
	clockFile string
	offset    time.Duration
}

// Endpoint is a service: a port of a host.
type Endpoint struct {
	Host *Host
	Port int
}

func (e Endpoint) String() string { return fmt.Sprintf("%s:%d", e.Host.Name, e.Port) }

// New makes an empty lab; everything it made goes when the test ends.
func New(t testing.TB) *Lab {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Missing(t, "the lab needs root (iptables' nat table, processes under group ids)")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		testenv.Missing(t, "the lab needs iptables (make up installs it)")
	}
	l := &Lab{t: t, links: map[linkKey]*Link{},
		tox: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())}
	if err := l.takeSlot(); err != nil {
		t.Fatalf("lab: %v", err)
	}
	removeChain(l.chain) // a run interrupted in this slot left it
	for _, args := range [][]string{{"-t", "nat", "-N", l.chain}, {"-t", "nat", "-A", "OUTPUT", "-j", l.chain}} {
		if err := iptables(args...); err != nil {
			t.Fatalf("lab: %v", err)
		}
	}
	t.Cleanup(func() {
		for _, k := range l.links {
			k.proxy.Stop()
		}
		removeChain(l.chain)
		_ = l.lock.Close() // releases the slot
	})
	return l
}

// takeSlot holds the first free slot: an exclusive flock on its file,
// which the kernel releases with the process however it ends.
func (l *Lab) takeSlot() error {
	for slot := range Slots {
		f, err := os.OpenFile(fmt.Sprintf("%s/flashsale-lab-%d.lock", os.TempDir(), slot), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			_ = f.Close()
			continue
		}
		l.slot, l.lock, l.chain = slot, f, fmt.Sprintf("%s-%d", Chain, slot)
		return nil
	}
	return fmt.Errorf("all %d lab slots are taken", Slots)
}

// Host adds a host.
func (l *Lab) Host(name string) *Host {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.hosts) >= 100 {
		l.t.Fatalf("lab: a slot has 100 hosts")
	}
	h := &Host{Name: name, Gid: firstGid + uint32(100*l.slot+len(l.hosts)), lab: l}
	l.hosts = append(l.hosts, h)
	return h
}

// Hosts lists the lab's hosts.
func (l *Lab) Hosts() []*Host {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*Host(nil), l.hosts...)
}

// Connect gives from a link of its own to each endpoint (once: a link made
// before is kept). Connections opened before it go around the link: connect
// before the processes start.
func (l *Lab) Connect(from *Host, to ...Endpoint) {
	l.t.Helper()
	for _, e := range to {
		if _, err := l.connect(from, e); err != nil {
			l.t.Fatalf("lab: linking %s to %s: %v", from.Name, e, err)
		}
	}
}

func (l *Lab) connect(from *Host, to Endpoint) (*Link, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := linkKey{from, to}
	if k := l.links[key]; k != nil {
		return k, nil
	}
	listen := testenv.FreeAddr(l.t)
	name := fmt.Sprintf("%s-to-%s", from.Name, to)
	p := toxiproxy.NewProxy(l.tox, name, listen, "127.0.0.1:"+strconv.Itoa(to.Port))
	if err := l.tox.Collection.Add(p, true); err != nil {
		return nil, err
	}
	_, port, _ := strings.Cut(listen, ":")
	if err := iptables("-t", "nat", "-A", l.chain, "-p", "tcp", "-d", "127.0.0.1", "--dport", strconv.Itoa(to.Port),
		"-m", "owner", "--gid-owner", strconv.FormatUint(uint64(from.Gid), 10),
		"-j", "DNAT", "--to-destination", "127.0.0.1:"+port); err != nil {
		p.Stop()
		return nil, err
	}
	k := &Link{From: from, To: to, proxy: p}
	l.links[key] = k
	return k, nil
}

// Link returns the link from from to to (nil when there is none).
func (l *Lab) Link(from *Host, to Endpoint) *Link {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.links[linkKey{from, to}]
}

// Links returns every link, or those from from when it is set, or to a
// port of to when it is set.
func (l *Lab) Links(from, to *Host) []*Link {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*Link
	for _, k := range l.links {
		if (from == nil || k.From == from) && (to == nil || k.To.Host == to) {
			out = append(out, k)
		}
	}
	return out
}

// HealAll removes every link's toxics and sets every clock right.
func (l *Lab) HealAll() error {
	var errs []string
	for _, k := range l.Links(nil, nil) {
		if err := k.Heal(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	for _, h := range l.Hosts() {
		if h.offset != 0 {
			if err := h.SetClock(0); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("lab: healing: %s", strings.Join(errs, "; "))
	}
	return nil
}

// SetClock sets the host's clock d from the machine's: a Go process's
// through its admin listener, a Redis node's through its timestamp file
// (libfaketime reads it again within a second).
func (h *Host) SetClock(d time.Duration) error {
	switch {
	case h.clockFile != "":
		if err := os.WriteFile(h.clockFile, []byte(faketimeOffset(d)+"\n"), 0o644); err != nil {
			return err
		}
	case h.Admin != "":
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := putClock(ctx, h.Admin, d); err != nil {
			return fmt.Errorf("lab: clock of %s: %w", h.Name, err)
		}
	default:
		return fmt.Errorf("lab: host %s has no clock to set", h.Name)
	}
	h.offset = d
	return nil
}

// Clock returns the offset SetClock gave the host.
func (h *Host) Clock() time.Duration { return h.offset }

// faketimeOffset writes d as libfaketime's relative offset ("+1.500000",
// seconds).
func faketimeOffset(d time.Duration) string {
	s := strconv.FormatFloat(d.Seconds(), 'f', 6, 64)
	if d >= 0 {
		s = "+" + s
	}
	return s
}

func iptables(args ...string) error {
	out, err := exec.Command("iptables", append([]string{"-w"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// removeChain removes a nat chain of the lab's.
func removeChain(chain string) {
	for iptables("-t", "nat", "-D", "OUTPUT", "-j", chain) == nil {
	}
	_ = iptables("-t", "nat", "-F", chain)
	_ = iptables("-t", "nat", "-X", chain)
}
