package manifests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const alertTestsFile = "deploy/observability/alerts_test.yaml"

// promtool returns the path of promtool (Debian's prometheus package, which
// `make up` installs); without it the test skips, unless the stack is
// required.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("FLASHSALE_REQUIRE_STACK") == "1" {
			t.Fatal("promtool is missing: `make up` installs it (Debian package prometheus)")
		}
		t.Skip("promtool is not installed")
	}
	return p
}

// TestPromtoolRules runs the real promtool: `check rules` over alerts.yaml and
// `test rules` over its unit tests, and checks that every alert has a case in
// which it fires.
func TestPromtoolRules(t *testing.T) {
	bin := promtool(t)
	dir := filepath.Join(repoRoot, "deploy/observability")
	for _, args := range [][]string{{"check", "rules", "alerts.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("SUCCESS")) {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}
	b, err := os.ReadFile(filepath.Join(repoRoot, alertsFile))
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	tb, err := os.ReadFile(filepath.Join(repoRoot, alertTestsFile))
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `yaml:"alertname"`
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(tb, &tests); err != nil {
		t.Fatal(err)
	}
	fires := map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			}
		}
	}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" && !fires[r.Alert] {
				t.Errorf("alert %s has no promtool case in which it fires (%s)", r.Alert, alertTestsFile)
			}
		}
	}
}
