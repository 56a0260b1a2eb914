package app

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"flashsale/bench/internal/config"
	"flashsale/bench/internal/load"
	"flashsale/bench/internal/report"
)

// runMeta says how the run was made: seed, commit, command line, machine.
func runMeta(cfg *config.Config, seed uint64) report.Meta {
	host, _ := os.Hostname()
	m := report.Meta{Seed: seed, Commit: commit(), GoVersion: runtime.Version(), Args: cfg.Args, Host: host,
		OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), Engine: load.EngineName}
	if cfg.Shards > 1 {
		m.Shard = strconv.Itoa(cfg.Shard) + "/" + strconv.Itoa(cfg.Shards)
	}
	for _, a := range cfg.SourceAddrs() {
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
