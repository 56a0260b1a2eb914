package api

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"testing"
)

// Every code SPEC.md's API names is in Codes, once; the spec is read from
// ../shared/SPEC.md beside the checkout when it is there.
func TestCodesCoverTheSpec(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Codes {
		if seen[c] {
			t.Fatalf("code %s listed twice", c)
		}
		seen[c] = true
		if !regexp.MustCompile(`^[A-Z]+(_[A-Z]+)*$`).MatchString(c) {
			t.Fatalf("code %q is not UPPER_SNAKE", c)
		}
	}
	spec, err := os.ReadFile("../../../shared/SPEC.md")
	if err != nil {
		spec, err = os.ReadFile("../../../../shared/SPEC.md")
	}
	if err != nil {
		t.Skipf("SPEC.md not beside the checkout: %v", err)
	}
	for _, m := range regexp.MustCompile(`"error":"([A-Z_]+)"`).FindAllSubmatch(spec, -1) {
		if c := string(m[1]); c != "CODE" && !slices.Contains(Codes, c) { // CODE is the spec's placeholder
			t.Errorf("SPEC.md names %s, Codes lacks it", m[1])
		}
	}
}

func TestErrorBodyIsJSON(t *testing.T) {
	for _, c := range Codes {
		var v struct{ Error string }
		if err := json.Unmarshal(ErrorBody(c), &v); err != nil || v.Error != c {
			t.Fatalf("ErrorBody(%s) = %s: %v", c, ErrorBody(c), err)
		}
	}
}

func TestEveryCodeHasAStatus(t *testing.T) {
	if len(Status) != len(Codes) {
		t.Fatalf("%d statuses for %d codes", len(Status), len(Codes))
	}
	for _, c := range Codes {
		if st := Status[c]; st < 400 || st > 599 {
			t.Errorf("code %s: status %d", c, st)
		}
	}
}
