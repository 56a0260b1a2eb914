package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestNeedDebian: need_debian (bench/peers/cpu.sh) passes when every
// command and file it checks is there, and otherwise, not root, stops with
// the apt-get line to run. (As root it installs, which a test cannot undo;
// id is stubbed so the suite's root does not.)
func TestNeedDebian(t *testing.T) {
	file := filepath.Join(t.TempDir(), "present")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(call string) (string, error) {
		out, err := exec.Command("bash", "-c", `set -euo pipefail; source peers/cpu.sh; id() { echo 1000; }
`+call+`; echo passed`).CombinedOutput()
		return string(out), err
	}
	if out, err := run(`need_debian sizing "bash" bash ` + file); err != nil || strings.TrimSpace(out) != "passed" {
		t.Errorf("need_debian with everything there: %v\n%s", err, out)
	}
	for _, check := range []string{"flashsale-no-such-command", "/nonexistent/flashsale/module.so"} {
		out, err := run(`need_debian sizing "wrk flashsale-no-such-package" bash ` + check)
		want := "sizing: missing tools; as root run: apt-get install -y wrk flashsale-no-such-package"
		if err == nil || !strings.Contains(out, want) || strings.Contains(out, "passed") {
			t.Errorf("need_debian without %s: %v\n%s\nwant it to stop with %q", check, err, out, want)
		}
	}
}

// TestScriptsInstallWrk: each script that runs wrk asks need_debian for it
// before its first wrk run. deploy/sizing.sh stopped on a fresh machine at
// "wrk: command not found": bench/peers.sh installed wrk and it did not.
func TestScriptsInstallWrk(t *testing.T) {
	need := regexp.MustCompile(`^\s*need_debian \S+ "[^"]*"((?:\s+\S+)*)`)
	runsWrk := regexp.MustCompile(`(^|[\s(=])wrk -`)
	for _, path := range []string{"peers.sh", "../deploy/sizing.sh"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.ReplaceAll(string(b), "\\\n", " "), "\n")
		ensured := false
		for i, line := range lines {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			if m := need.FindStringSubmatch(line); m != nil && slices.Contains(strings.Fields(m[1]), "wrk") {
				ensured = true
			}
			if runsWrk.MatchString(line) {
				if !ensured {
					t.Errorf("%s runs wrk (line %d of its joined lines) before need_debian checks for wrk", path, i+1)
				}
				break
			}
		}
	}
}
