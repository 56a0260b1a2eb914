package config

import (
	"os"
	"strings"
	"testing"

	shared "flashsale/sharding/config"
)

// TestREADMEListsEveryOption keeps writer/README.md's configuration table in
// step with the settings: every row Markdown writes is in it.
func TestREADMEListsEveryOption(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	set := shared.NewSet("writer", "")
	c := Default()
	c.Register(set)
	var sb strings.Builder
	set.Markdown(&sb)
	for _, row := range strings.Split(strings.TrimSpace(sb.String()), "\n") {
		if !strings.Contains(string(b), row) {
			t.Errorf("README lacks the row %s", row)
		}
	}
}
