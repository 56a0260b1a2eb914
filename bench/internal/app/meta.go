package app

import (
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"flashsale/bench/internal/config"
	"flashsale/bench/internal/report"
)

// runMeta says how the run was made: seed, commit, command line, machine.
func runMeta(cfg *config.Config, seed uint64) report.Meta {
	host, _ := os.Hostname()
	m := report.Meta{Seed: seed, Commit: commit(), GoVersion: runtime.Version(), Args: cfg.Args, Host: host,
		OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
	if cfg.Shards > 1 {
		m.Shard = strconv.Itoa(cfg.Shard) + "/" + strconv.Itoa(cfg.Shards)
	}
	for _, a := range sources(cfg) {
		m.SourceAddr = append(m.SourceAddr, a.String())
	}
	return m
}

// commit is the VCS revision the binary was built from (with "+dirty"
// when the tree had changes), else what git says of the working directory.
func commit() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
		if rev != "" {
			return rev + dirty
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// sources are the local addresses to bind, of the target's family (an
// "auto" list holds both).
func sources(cfg *config.Config) []netip.Addr {
	all := cfg.Sources()
	if len(all) == 0 {
		return nil
	}
	ta, err := net.ResolveTCPAddr("tcp", cfg.Addr)
	if err != nil {
		return all // load.New reports the address
	}
	v4 := ta.AddrPort().Addr().Unmap().Is4()
	var out []netip.Addr
	for _, a := range all {
		if a.Unmap().Is4() == v4 {
			out = append(out, a.Unmap())
		}
	}
	return out
}
