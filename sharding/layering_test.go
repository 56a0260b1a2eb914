package sharding_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// acceptedWriterImports are the writer packages code under sharding/ may
// import, each with why. writer/schema: flashctl (sharding/cmd/flashctl and
// sharding/ops) reads and writes PostgreSQL, which the writer owns, and does
// so only through the writer's schema package, its API for the other
// binaries (a leaf that imports only sharding and sharding/sale), so that no
// SQL against the writer's tables is written under sharding/
// (TestNoSQLOutsideTheWriter in writer/schema). It is the one arrow up.
var acceptedWriterImports = map[string]bool{"flashsale/writer/schema": true}

// Nothing under sharding/ imports writer code but the accepted exception: the
// layers run writer -> sharding, and a wire format shared by both ends lives
// below them (sharding/orderevent). An import from a test file counts too.
func TestShardingImportsNoWriterCode(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, "flashsale/writer") && !acceptedWriterImports[p] {
				t.Errorf("%s imports %s: sharding sits below the writer", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
