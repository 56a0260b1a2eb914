package sale

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// retired are words the package doc's glossary ("Words of fair access")
// retires, each with the words to write instead.
var retired = map[string]string{
	"lottery": `"raffle" for the access mode, "the draw" for what ranks the entrants`,
}

// TestOneWordPerIdea keeps the glossary of the package doc true: no
// non-test file of the repository (Go, Markdown, the sale page's HTML, JS,
// CSS and messages, scripts, SQL, manifests) uses a word it retires, in any
// case, but for the glossary itself naming it. The code, the docs and the
// sale page had called the same things by seven words (room, raffle, draw,
// entrants, lottery, front door, access), "lottery" among them for the
// shards of the raffle's entrants (issue 57). Vendored third-party files
// (deploy/e2e/testdata/axe-core), dot-folders (.git, .run) and build
// output are not the project's words and are skipped.
func TestOneWordPerIdea(t *testing.T) {
	root := moduleRoot(t)
	glossary, err := filepath.Abs("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var words []string
	for w := range retired {
		words = append(words, regexp.QuoteMeta(w))
	}
	re := regexp.MustCompile(`(?i)` + strings.Join(words, "|"))
	exts := map[string]bool{".go": true, ".md": true, ".html": true, ".js": true, ".css": true, ".json": true,
		".tmpl": true, ".lua": true, ".sql": true, ".sh": true, ".yaml": true, ".yml": true, ".txt": true}
	skip := map[string]bool{"bin": true, "node_modules": true, "vendor": true, "axe-core": true, "out": true}
	walked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || skip[name]) {
				return filepath.SkipDir
			}
			return nil
		}
		if !exts[filepath.Ext(name)] || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		walked++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := string(b)
		if path == glossary {
			// The glossary names the words it retires, and only it may.
			if i := strings.Index(text, "# Words of fair access"); i >= 0 {
				text = text[:i]
			}
		}
		rel, _ := filepath.Rel(root, path)
		for i, line := range strings.Split(text, "\n") {
			for _, w := range re.FindAllString(line, -1) {
				t.Errorf("%s:%d: %q in %q: the glossary (sharding/sale/doc.go) retires it: write %s",
					rel, i+1, w, strings.TrimSpace(line), retired[strings.ToLower(w)])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if walked < 200 {
		t.Fatalf("walked %d files from %s, want the repository's", walked, root)
	}
}

// moduleRoot returns the folder of go.mod above the working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = up
	}
}
