package e2e_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestReadmeListsEveryTest keeps README.md's table of this folder's tests in
// step with the Test functions: every test is named in a row (exactly, or by
// a row ending in ... that names a prefix, as TestBrowser... does), and every
// name in the table is a test. The table kept by hand lacked four tests, and
// the chaos section named a seed make test had left. It runs offline.
func TestReadmeListsEveryTest(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| test | what happens |\n|---|---|\n")
	if !ok {
		t.Fatal("README.md has no | test | what happens | table")
	}
	var rows []string
	name := regexp.MustCompile("`(Test[A-Za-z0-9_]*(?:\\.\\.\\.)?)`")
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "|") {
			break
		}
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			rows = append(rows, m[1])
		}
	}
	tests := testFuncs(t)
	covers := func(row, test string) bool {
		if prefix, ok := strings.CutSuffix(row, "..."); ok {
			return strings.HasPrefix(test, prefix)
		}
		return row == test
	}
	for _, test := range tests {
		found := false
		for _, r := range rows {
			found = found || covers(r, test)
		}
		if !found {
			t.Errorf("deploy/e2e/README.md's test table has no row for %s", test)
		}
	}
	for _, r := range rows {
		found := false
		for _, test := range tests {
			found = found || covers(r, test)
		}
		if !found {
			t.Errorf("deploy/e2e/README.md's test table names %s, which is no test of deploy/e2e", r)
		}
	}
	if seed := "SEED=" + strconv.FormatUint(chaosDefaultSeed, 10) + " "; !strings.Contains(string(b), seed) {
		t.Errorf("deploy/e2e/README.md's replay of make test's chaos run does not name its seed: want %q (chaosDefaultSeed)", seed)
	}
}

// testFuncs returns the names of the Test functions of this folder, TestMain
// left out.
func testFuncs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, path := range files {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && fn.Name.Name != "TestMain" {
				names = append(names, fn.Name.Name)
			}
		}
	}
	if len(names) < 20 {
		t.Fatalf("found %d tests in deploy/e2e, want all of them", len(names))
	}
	return names
}
