package config

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEListsEveryOption keeps writer/README.md's configuration table in
// step with Options.
func TestREADMEListsEveryOption(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Skipf("no README: %v", err)
	}
	for _, o := range Options {
		row := "| `-" + o.Flag + "` | `" + o.Env + "` |"
		if !strings.Contains(string(b), row) {
			t.Errorf("README lacks the row for -%s (%s); want a line starting %q", o.Flag, o.Env, row)
		}
	}
}
