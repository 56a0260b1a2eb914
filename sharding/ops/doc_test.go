package ops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocListsEveryPackage keeps the package doc's list of flashctl's
// packages (doc.go) in step with the folders under sharding/ops: every
// package is listed, and every listed name is a package here. The list is
// how a reader finds the room of a command.
func TestDocListsEveryPackage(t *testing.T) {
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "//\t"); ok && rest != "" {
			listed[strings.Fields(rest)[0]] = true
		}
	}
	dirs, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "internal" || d.Name() == "testdata" {
			continue
		}
		if code, _ := filepath.Glob(filepath.Join(d.Name(), "*.go")); len(code) == 0 {
			continue
		}
		if !listed[d.Name()] {
			t.Errorf("doc.go's list of packages lacks %s", d.Name())
		}
		delete(listed, d.Name())
	}
	for name := range listed {
		t.Errorf("doc.go's list of packages names %s, which is no package under sharding/ops", name)
	}
}
