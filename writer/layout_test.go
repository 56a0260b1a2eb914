package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeLayoutListsEveryPackage keeps README.md's package table in step
// with the tree: every package under internal/ has a row, and every row
// names a package there. The table kept by hand lacked 2 of 9 packages.
func TestReadmeLayoutListsEveryPackage(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| package | what it does |\n|---|---|\n")
	if !ok {
		t.Fatal("writer/README.md has no | package | what it does | table")
	}
	name := regexp.MustCompile("`([^`]+)`")
	rows := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "|") {
			break
		}
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			rows[m[1]] = true
		}
	}
	dirs, err := filepath.Glob("internal/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no package under writer/internal: %v", err)
	}
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && !rows[filepath.Base(d)] {
			t.Errorf("writer/README.md's package table has no row for internal/%s", filepath.Base(d))
		}
		delete(rows, filepath.Base(d))
	}
	for p := range rows {
		t.Errorf("writer/README.md's package table names %s, which is no package under writer/internal", p)
	}
}
