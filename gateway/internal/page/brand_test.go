package page

import (
	"regexp"
	"testing"

	"flashsale/sharding/sale"
)

// TestLightBackgroundsAreTheCSSs: the accent is checked at a sale's
// creation against the page's light backgrounds (sharding), which are the
// stylesheet's --bg and --panel.
func TestLightBackgroundsAreTheCSSs(t *testing.T) {
	css, _ := files.ReadFile("assets/sale.css")
	root := regexp.MustCompile(`(?s):root \{(.*?)\}`).FindSubmatch(css)
	if root == nil {
		t.Fatal("no :root block in sale.css")
	}
	var got []string
	for _, v := range []string{"--bg", "--panel"} {
		m := regexp.MustCompile(v + `: (#[0-9a-f]+);`).FindSubmatch(root[1])
		if m == nil {
			t.Fatalf("sale.css :root has no %s", v)
		}
		c, err := sale.ParseHexColor(string(m[1]))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(m[1]))
		found := false
		for _, bg := range sale.PageLightBackgrounds {
			b, _ := sale.ParseHexColor(bg)
			found = found || b == c
		}
		if !found {
			t.Errorf("sale.css %s is %s, not one of sale.PageLightBackgrounds %v", v, m[1], sale.PageLightBackgrounds)
		}
	}
	if len(got) != len(sale.PageLightBackgrounds) {
		t.Errorf("backgrounds %v, sharding checks %v", got, sale.PageLightBackgrounds)
	}
}
