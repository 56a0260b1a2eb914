package sharding

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocKeyMap keeps the key map in the package doc (doc.go) true to the
// key functions: every key a function of this package builds has the shape
// of exactly one line of the map, and every line of the map is the shape of
// a key some function builds. The map kept by hand lacked five keys and
// named the draw's key :draw, where it is :entrants.
func TestDocKeyMap(t *testing.T) {
	const tag, sale = "s42:0:3", 42
	built := map[string]string{ // each key function -> a key it builds
		"SalesKey":            SalesKey,
		"SaleKey":             SaleKey(sale),
		"RelaysKey":           RelaysKey(sale),
		"DriftKey":            DriftKey(sale),
		"ReshardKey":          ReshardKey(sale),
		"AppendStockKey":      string(AppendStockKey(nil, tag, 4201)),
		"AppendBuyersKey":     string(AppendBuyersKey(nil, tag)),
		"AppendOrderKey":      string(AppendOrderKey(nil, tag, NewOrderID(sale, 1, 2))),
		"AppendFenceKey":      string(AppendFenceKey(nil, tag)),
		"AppendHaltKey":       string(AppendHaltKey(nil, tag)),
		"AppendMoveKey":       string(AppendMoveKey(nil, tag, "m1")),
		"AppendNoMoveKey":     string(AppendNoMoveKey(nil, tag)),
		"AppendJournalKey":    string(AppendJournalKey(nil, tag)),
		"AppendEventsKey":     string(AppendEventsKey(nil, tag)),
		"AppendRelayLeaseKey": string(AppendRelayLeaseKey(nil, tag)),
		"AppendRelayMarkKey":  string(AppendRelayMarkKey(nil, tag)),
		"AppendTakenKey":      string(AppendTakenKey(nil, tag)),
		"AppendChainKey":      string(AppendChainKey(nil, tag)),
		"AppendPersistedKey":  string(AppendPersistedKey(nil, tag)),
		"AppendFenceMarksKey": string(AppendFenceMarksKey(nil, tag)),
		"RoomStateKey":        RoomStateKey(sale),
		"RoomTailKey":         RoomTailKey(sale),
		"RoomSeedKey":         RoomSeedKey(sale),
		"RoomHeadKeyKey":      RoomHeadKeyKey(sale),
		"RoomLogKey":          RoomLogKey(sale),
		"RoomEntrantsKey":     RoomEntrantsKey(sale, 3),
		"PresaleListKey":      PresaleListKey(sale),
		"PresaleCapKey":       PresaleCapKey(sale),
	}
	for _, name := range keyFunctions(t) {
		if _, ok := built[name]; !ok {
			t.Errorf("%s builds a key this test does not build: add it here and its shape to doc.go's key map", name)
		}
	}
	shapes := docKeyShapes(t)
	used := make([]bool, len(shapes))
	for name, key := range built {
		var matched []string
		for i, s := range shapes {
			if s.re.MatchString(key) {
				used[i] = true
				matched = append(matched, s.shape)
			}
		}
		switch {
		case len(matched) == 0:
			t.Errorf("doc.go's key map lacks %s, the key %s builds", key, name)
		case len(matched) > 1:
			t.Errorf("%s (%s) has the shape of several lines of doc.go's key map: %v", key, name, matched)
		}
	}
	for i, s := range shapes {
		if !used[i] {
			t.Errorf("doc.go's key map names %s, a key no function of the package builds", s.shape)
		}
	}
}

type keyShape struct {
	shape string
	re    *regexp.Regexp
}

// docKeyShapes reads the key map of doc.go: its indented lines, each a key's
// shape then what it holds. In a shape {tag} is a shard's hash tag and
// <name> one field (an id, a number).
func docKeyShapes(t *testing.T) []keyShape {
	t.Helper()
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	field := regexp.MustCompile(`<[a-zA-Z]+>`)
	var out []keyShape
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "//\t")
		if !ok || rest == "" {
			continue
		}
		shape := strings.Fields(rest)[0]
		var re strings.Builder
		re.WriteString("^")
		for i, part := range strings.Split(shape, "{tag}") {
			if i > 0 {
				re.WriteString(`\{[^{}]+\}`)
			}
			lits := field.Split(part, -1)
			for j, lit := range lits {
				if j > 0 {
					re.WriteString(`[^:{}]+`)
				}
				re.WriteString(regexp.QuoteMeta(lit))
			}
		}
		re.WriteString("$")
		out = append(out, keyShape{shape, regexp.MustCompile(re.String())})
	}
	if len(out) < 10 {
		t.Fatalf("doc.go: found %d lines of the key map, want its two blocks", len(out))
	}
	return out
}

// keyFunctions returns the exported functions, constants and variables of
// the package (tests left out) whose name ends in Key: the key functions.
func keyFunctions(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	keep := func(id *ast.Ident) {
		if id.IsExported() && strings.HasSuffix(id.Name, "Key") {
			names = append(names, id.Name)
		}
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					keep(d.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if v, ok := s.(*ast.ValueSpec); ok {
						for _, id := range v.Names {
							keep(id)
						}
					}
				}
			}
		}
	}
	if len(names) < 10 {
		t.Fatalf("found %d key functions, want every exported *Key of the package", len(names))
	}
	return names
}
