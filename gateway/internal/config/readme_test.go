package config

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeListsEveryFlag keeps gateway/README.md's table in step with the
// flags: every flag and its environment variable appear in it.
func TestReadmeListsEveryFlag(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	Usage(&sb)
	for _, line := range strings.Split(sb.String(), "\n") {
		f := strings.Split(line, "|")
		if len(f) < 4 || !strings.HasPrefix(strings.TrimSpace(f[1]), "`-") {
			continue
		}
		if !strings.Contains(string(b), f[1]+"|"+f[2]+"|") {
			t.Errorf("gateway/README.md lacks the row of %s %s", f[1], f[2])
		}
	}
}
