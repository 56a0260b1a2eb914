package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeLayoutListsEveryPackage keeps README.md's layout table in step
// with the tree: every package under internal/ has a row, and every path a
// row names exists (internal/... under gateway/, a shared package from the
// module root). The table kept by hand lacked 3 of 14 packages.
func TestReadmeLayoutListsEveryPackage(t *testing.T) {
	rows := packageTable(t, "README.md")
	dirs, err := filepath.Glob("internal/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no package under gateway/internal: %v", err)
	}
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && !rows[d] {
			t.Errorf("gateway/README.md's layout table has no row for %s", d)
		}
	}
	for p := range rows {
		_, err := os.Stat(p)
		if err != nil && !strings.HasPrefix(p, "internal/") {
			_, err = os.Stat(filepath.Join("..", p))
		}
		if err != nil {
			t.Errorf("gateway/README.md's layout table names %s, which is not in the tree", p)
		}
	}
}

// packageTable returns the paths named in the first cell of the rows of
// readme's "| package | what it does |" table.
func packageTable(t *testing.T, readme string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| package | what it does |\n|---|---|\n")
	if !ok {
		t.Fatalf("%s has no | package | what it does | table", readme)
	}
	path := regexp.MustCompile("`([^`]+)`")
	rows := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "|") {
			break
		}
		for _, m := range path.FindAllStringSubmatch(cells[1], -1) {
			rows[m[1]] = true
		}
	}
	return rows
}
