// Package stack_test checks the local stack scripts without starting
// anything: every part parses, the entry point keeps its commands and
// environment variables, and ensure_pkg names what to install.
package stack_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPartsParse(t *testing.T) {
	parts, err := filepath.Glob("*.sh")
	if err != nil || len(parts) < 7 {
		t.Fatalf("parts %v (%v): want stack.sh and its sourced files", parts, err)
	}
	for _, p := range parts {
		if out, err := exec.Command("bash", "-n", p).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", p, err, out)
		}
	}
}

// TestUsage: an unknown command prints the usage, with every command and
// environment variable, and exits 2.
func TestUsage(t *testing.T) {
	out, err := exec.Command("bash", "stack.sh", "no-such-command").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2\n%s", err, out)
	}
	for _, want := range []string{"up", "down", "--purge", "reset", "status", "redis-kill PORT", "redis-start [PORT]", "redis-freeze PORT", "redis-thaw PORT", "redis-stop", "pg-restart",
		"broker-stop", "broker-start", "REDIS_BASE_PORT", "PG_PORT", "KAFKA_PORT", "KAFKA_CONTROLLER_PORT",
		"KAFKA_VERSION", "DATABASE_URL", "FLASHSALE_KAFKA=kfake"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("usage lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "Layout:") {
		t.Errorf("usage runs into the layout notes:\n%s", out)
	}
}

// TestEnsurePkgSaysWhatToInstall: not root, a missing command stops with the
// apt-get line to run; a present one passes.
func TestEnsurePkgSaysWhatToInstall(t *testing.T) {
	script := `set -euo pipefail; RUN=` + t.TempDir() + `; source lib.sh; source install.sh; is_root() { false; }
ensure_pkg bash bash
ensure_pkg flashsale-no-such-command flashsale-no-such-package`
	out, err := exec.Command("bash", "-c", script).CombinedOutput()
	if err == nil {
		t.Fatalf("a missing command passed:\n%s", out)
	}
	want := "'flashsale-no-such-command' is missing: install the Debian package 'flashsale-no-such-package' (sudo apt-get install -y flashsale-no-such-package)"
	if !strings.Contains(string(out), want) {
		t.Fatalf("got:\n%s\nwant a line containing %s", out, want)
	}
}

// TestStackToolsEntries: every STACK_TOOLS entry is "CMD PKG...".
func TestStackToolsEntries(t *testing.T) {
	out, err := exec.Command("bash", "-c", `set -eu; RUN=/nonexistent; source lib.sh; source install.sh; for e in "${STACK_TOOLS[@]}"; do echo "$e"; done`).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line != "" && len(strings.Fields(line)) < 2 {
			t.Errorf("STACK_TOOLS entry %q: want a command and at least one package", line)
		}
	}
}

// TestStackTestsOff: with STACK_TESTS=0 (make demo) `up` ensures none of the
// tests' tools and fonts; by default it ensures each.
func TestStackTestsOff(t *testing.T) {
	run := func(env string) []string {
		script := `set -eu; RUN=/nonexistent; source lib.sh; source install.sh
ensure_pkg() { echo "pkg $1"; }; ensure_font() { echo "font $1"; }
` + env + ` tools_up`
		out, err := exec.Command("bash", "-c", script).CombinedOutput()
		if err != nil {
			t.Fatalf("%s tools_up: %v\n%s", env, err, out)
		}
		return strings.Fields(string(out))
	}
	if got := run("STACK_TESTS=0"); len(got) != 0 {
		t.Errorf("STACK_TESTS=0 tools_up ensured %q, want nothing", got)
	}
	if got := run(""); !slices.Contains(got, "chromium") || !slices.Contains(got, "ja") {
		t.Errorf("tools_up ensured %q, want the browser and the fonts", got)
	}
}
