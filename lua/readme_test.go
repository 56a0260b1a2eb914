package lua

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeListsEveryScript keeps README.md's script table in step with the
// scripts: every *.lua file has a row, and every script a row names is a
// file. The table kept by hand lacked fence.lua.
func TestReadmeListsEveryScript(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	script := regexp.MustCompile("`([a-z_]+\\.lua)`")
	inTable := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(line, "| `") {
			continue
		}
		for _, m := range script.FindAllStringSubmatch(cells[1], -1) {
			inTable[m[1]] = true
		}
	}
	files, err := filepath.Glob("*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no *.lua beside the test: %v", err)
	}
	for _, f := range files {
		if !inTable[f] {
			t.Errorf("lua/README.md's script table has no row for %s", f)
		}
		delete(inTable, f)
	}
	for f := range inTable {
		t.Errorf("lua/README.md's script table names %s, which is no file in lua/", f)
	}
}
