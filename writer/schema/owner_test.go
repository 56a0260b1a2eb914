package schema

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestNoSQLOutsideTheWriter keeps the SQL against the writer's tables in
// writer/: a .go file elsewhere whose string literals (a concatenation read
// as one) hold a statement that names one of the tables the migrations
// create fails it. The reads of flashctl and the bench's audit were written
// in sharding/ops and bench/internal/audit, so a schema change touched three
// folders; they are this package's functions now.
//
// Test files are exempt: they plant rows the writer would never write (an
// order without its history, a 202 never persisted, a row deleted by hand)
// to see the checks catch them, and clean up after themselves; a write API
// for that would be a way to corrupt the books in the production code. So is
// a package of test helpers (a folder named ...test, such as
// sharding/ops/internal/opstest) that only test files import: the test
// checks that none of the other files imports it.
func TestNoSQLOutsideTheWriter(t *testing.T) {
	tables := writerTables(t)
	names := strings.Join(tables, "|")
	target := regexp.MustCompile(`(?i)\b(from|join|into|update|table)\s+(only\s+)?(public\.)?(` + names + `)\b`)
	verb := regexp.MustCompile(`(?i)\b(select|insert|update|delete|truncate|alter|copy)\b`)
	root := filepath.Join("..", "..")
	found := 0
	type hit struct {
		where, table string
		dir          string
	}
	var hits []hit
	imported := map[string]string{} // package import path -> a non-test file importing it
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "writer" || (rel != "." && strings.HasPrefix(d.Name(), ".")) || d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		found++
		lits, imports := stringGroups(t, path)
		for _, imp := range imports {
			imported[imp] = rel
		}
		for _, lit := range lits {
			if target.MatchString(lit.text) && verb.MatchString(lit.text) {
				hits = append(hits, hit{rel + ":" + strconv.Itoa(lit.line), target.FindString(lit.text), filepath.ToSlash(filepath.Dir(rel))})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if strings.HasSuffix(h.dir, "test") {
			by, ok := imported["flashsale/"+h.dir]
			if !ok {
				continue // test helpers, imported by tests only
			}
			t.Errorf("%s: SQL against the writer's tables (%s) in test helpers that %s, no test, imports", h.where, h.table, by)
			continue
		}
		t.Errorf("%s: SQL against the writer's tables (%s) outside writer/: add a function to writer/schema and call it", h.where, h.table)
	}
	if found < 50 {
		t.Fatalf("walked %d .go files outside writer/, want the repository's", found)
	}
}

// writerTables returns the tables the migrations create.
func writerTables(t *testing.T) []string {
	t.Helper()
	create := regexp.MustCompile(`(?i)create\s+table\s+(if\s+not\s+exists\s+)?([a-z_][a-z0-9_]*)`)
	var out []string
	err := fs.WalkDir(migrations, "migrations", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations, path)
		for _, m := range create.FindAllStringSubmatch(string(b), -1) {
			out = append(out, m[2])
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sales", "items", "orders", "releases", "order_history", "sale_events"} {
		if !strings.Contains(" "+strings.Join(out, " ")+" ", " "+want+" ") {
			t.Fatalf("the migrations create %v, no table %s", out, want)
		}
	}
	return out
}

type literal struct {
	text string
	line int
}

// stringGroups returns the string literals of the Go file at path, each
// concatenation of literals (a + b + c) as one text with a space between,
// and the paths the file imports.
func stringGroups(t *testing.T, path string) (lits []literal, imports []string) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []literal
	walk := func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if n.Op != token.ADD {
				return true
			}
			var parts []string
			ast.Inspect(n, func(m ast.Node) bool {
				if l, ok := m.(*ast.BasicLit); ok && l.Kind == token.STRING {
					if s, err := strconv.Unquote(l.Value); err == nil {
						parts = append(parts, s)
					}
				}
				return true
			})
			out = append(out, literal{strings.Join(parts, " "), fset.Position(n.Pos()).Line})
			return false
		case *ast.BasicLit:
			if n.Kind == token.STRING {
				if s, err := strconv.Unquote(n.Value); err == nil {
					out = append(out, literal{s, fset.Position(n.Pos()).Line})
				}
			}
		}
		return true
	}
	ast.Inspect(f, walk)
	for _, imp := range f.Imports {
		if p, err := strconv.Unquote(imp.Path.Value); err == nil {
			imports = append(imports, p)
		}
	}
	return out, imports
}
