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
	checkMakeList(t, "RACE_PKGS", packagesMatching(t, concurrent, false), "has concurrency of its own")
}

// checkMakeList fails t for each package of want missing from the
// Makefile's list name (why it belongs there), and for each listed package
// that does not exist.
func checkMakeList(t *testing.T, name string, want []string, why string) {
	t.Helper()
	listed := makeList(t, name)
	for _, pkg := range want {
		if !slices.Contains(listed, pkg) {
			t.Errorf("%s %s but is not in the Makefile's %s", pkg, why, name)
		}
	}
	for _, pkg := range listed {
		if _, err := os.Stat(filepath.Join(repoRoot, pkg)); err != nil {
			t.Errorf("%s lists %s: %v", name, pkg, err)
		}
	}
}

// makeList returns the packages of the Makefile's variable name (NAME = a
// list, continued over lines with backslashes).
func makeList(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + name + ` = ((?:.*\\\n)*.*)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("the Makefile has no %s", name)
	}
	return strings.Fields(strings.ReplaceAll(string(m[1]), "\\", " "))
}

// packagesMatching returns the packages ("./dir") with a Go file that re
// matches: a test file when tests, else a file that is not a test.
func packagesMatching(t *testing.T, re *regexp.Regexp, tests bool) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != repoRoot && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") != tests {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if re.Match(src) {
			rel, _ := filepath.Rel(repoRoot, filepath.Dir(path))
			if pkg := "./" + filepath.ToSlash(rel); !slices.Contains(out, pkg) {
				out = append(out, pkg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// faultTest matches the declaration of a fault or browser test, which make
// test runs in its second phase, one package at a time.
var faultTest = regexp.MustCompile(`(?m)^func Test(Fault|Browser)\w*\(`)

// TestPhaseTwoListCoversFaultTests: make test's second phase runs the
// packages listed in the Makefile's FAULT_PKGS; every package with a
// TestFault or TestBrowser test must be on the list.
func TestPhaseTwoListCoversFaultTests(t *testing.T) {
	checkMakeList(t, "FAULT_PKGS", packagesMatching(t, faultTest, true), "has TestFault or TestBrowser tests")
}
