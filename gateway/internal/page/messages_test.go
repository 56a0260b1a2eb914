package page

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// languages returns the message files' tags and contents.
func languages(t *testing.T) map[string]map[string]string {
	t.Helper()
	entries, err := fs.ReadDir(files, messagesDir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, e := range entries {
		tag := strings.TrimSuffix(e.Name(), ".json")
		m, err := readMessages(tag)
		if err != nil {
			t.Fatal(err)
		}
		out[tag] = m
	}
	if out["en"] == nil || out["ja"] == nil {
		t.Fatalf("languages %v: want en and ja at least", slices.Sorted(func(yield func(string) bool) {
			for k := range out {
				if !yield(k) {
					return
				}
			}
		}))
	}
	return out
}

var placeholder = regexp.MustCompile(`\{(\w+)\}`)

func placeholders(s string) []string {
	var out []string
	for _, m := range placeholder.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return out
}

// TestEveryMessageInEveryLanguage: every message file has every key any
// other has, each with a text (a separator may be empty) and the same
// placeholders as English.
func TestEveryMessageInEveryLanguage(t *testing.T) {
	langs := languages(t)
	en := langs["en"]
	for tag, m := range langs {
		for key, text := range en {
			other, ok := m[key]
			switch {
			case !ok:
				t.Errorf("%s.json lacks %q (en: %q)", tag, key, text)
			case strings.TrimSpace(other) == "" && !strings.HasSuffix(key, ".separator"):
				t.Errorf("%s.json: %q is empty", tag, key)
			case !slices.Equal(placeholders(other), placeholders(text)):
				t.Errorf("%s.json: %q has placeholders %v, en has %v", tag, key, placeholders(other), placeholders(text))
			}
		}
		for key := range m {
			if _, ok := en[key]; !ok {
				t.Errorf("%s.json has %q, which en.json lacks", tag, key)
			}
		}
	}
}

// keyLike is a quoted literal in the scripts that has the shape of a
// message key; messageCall the first argument of t() and msg().
var (
	keyLike     = regexp.MustCompile(`'([a-z][A-Za-z]*(?:\.[a-z][A-Za-z]*)+)'`)
	messageCall = regexp.MustCompile(`\b(?:t|msg)\('([^']*)'`)
	i18nAttr    = regexp.MustCompile(`data-i18n(?:-label)?="([^"]+)"`)
)

// TestPageNamesOnlyKnownMessages: every key the scripts and the HTML use is
// in the message files (so in every language, by the test above), and every
// key of the files is used. A key is what t() and msg() are called with,
// and any quoted literal shaped like one (keys picked by a condition), but
// for the page's storage keys (flashsale.*).
func TestPageNamesOnlyKnownMessages(t *testing.T) {
	en := languages(t)["en"]
	used := map[string]bool{"language.name": true, "sentence.separator": true} // read by New and by text()
	for _, f := range []string{"sale.js", "i18n.js", "brand.js", "draw.js", "sale.html"} {
		src, err := files.ReadFile("assets/" + f)
		if err != nil {
			t.Fatal(err)
		}
		keys := map[string]bool{}
		for _, re := range []*regexp.Regexp{keyLike, messageCall, i18nAttr} {
			for _, m := range re.FindAllStringSubmatch(string(src), -1) {
				if !strings.HasPrefix(m[1], "flashsale.") {
					keys[m[1]] = true
				}
			}
		}
		for k := range keys {
			used[k] = true
			if _, ok := en[k]; !ok {
				t.Errorf("%s names message %q, which no message file has", f, k)
			}
		}
	}
	for k := range en {
		if !used[k] {
			t.Errorf("message %q is used nowhere", k)
		}
	}
}

// TestStaticTextIsEnglish: the HTML's own text, shown before the script
// runs, is en.json's (the script replaces it by the buyer's language).
func TestStaticTextIsEnglish(t *testing.T) {
	en := languages(t)["en"]
	html := string(Default().Page().Body)
	el := regexp.MustCompile(`data-i18n="([^"]+)"[^>]*>([^<]*)<`)
	n := 0
	for _, m := range el.FindAllStringSubmatch(html, -1) {
		n++
		if en[m[1]] != m[2] {
			t.Errorf("the HTML says %q for %s, en.json %q", m[2], m[1], en[m[1]])
		}
	}
	for _, m := range regexp.MustCompile(`aria-label="([^"]+)" data-i18n-label="([^"]+)"`).FindAllStringSubmatch(html, -1) {
		n++
		if en[m[2]] != m[1] {
			t.Errorf("the HTML labels %s %q, en.json %q", m[2], m[1], en[m[2]])
		}
	}
	if n < 10 {
		t.Fatalf("%d translated elements found in the HTML", n)
	}
}
