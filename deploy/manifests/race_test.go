package manifests

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// concurrent matches a line that starts a goroutine or uses a lock or an
// atomic: a package with one outside its tests has concurrency of its own.
var concurrent = regexp.MustCompile(`(?m)^\s*go [\w(]|\.Go\(|\bsync\.|\batomic\.`)

// TestRaceListCoversConcurrentPackages: make test-race runs only the
// packages listed in the Makefile's RACE_PKGS (the race build of every
// package cost make test about a minute for packages with nothing to race).
// Every package whose non-test code starts goroutines or uses sync or
// atomic must be on the list, and every listed package must exist.
func TestRaceListCoversConcurrentPackages(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^RACE_PKGS = ((?:.*\\\n)*.*)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("the Makefile has no RACE_PKGS")
	}
	listed := strings.Fields(strings.ReplaceAll(string(m[1]), "\\", " "))
	var want []string
	err = filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != repoRoot && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if concurrent.Match(src) {
			rel, _ := filepath.Rel(repoRoot, filepath.Dir(path))
			if pkg := "./" + filepath.ToSlash(rel); !slices.Contains(want, pkg) {
				want = append(want, pkg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range want {
		if !slices.Contains(listed, pkg) {
			t.Errorf("%s has concurrency of its own but is not in the Makefile's RACE_PKGS", pkg)
		}
	}
	for _, pkg := range listed {
		if _, err := os.Stat(filepath.Join(repoRoot, pkg)); err != nil {
			t.Errorf("RACE_PKGS lists %s: %v", pkg, err)
		}
	}
}
