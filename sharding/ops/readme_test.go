package ops

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeListsEveryCommand keeps the top README.md's list of flashctl's
// commands (its layout table's sharding row) in step with the command
// table: every command is listed, and every listed command is one. The
// list kept by hand lacked sale report and sale brand.
func TestReadmeListsEveryCommand(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(b), "the ops tool (")
	list, _, ok2 := strings.Cut(list, "; `flashctl --help`)")
	if !ok || !ok2 {
		t.Fatal("README.md has no list of flashctl's commands: \"the ops tool (`...`, ...; `flashctl --help`)\"")
	}
	// `sale create\|list` stands for sale create and sale list.
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(list, -1) {
		alts := strings.Split(m[1], `\|`)
		group, _, _ := strings.Cut(alts[0], " ")
		listed[alts[0]] = true
		for _, a := range alts[1:] {
			listed[group+" "+a] = true
		}
	}
	for _, c := range commands {
		if !listed[c.name] {
			t.Errorf("README.md's list of flashctl's commands lacks %q", c.name)
		}
		delete(listed, c.name)
	}
	for name := range listed {
		t.Errorf("README.md's list of flashctl's commands names %q, which is no command", name)
	}
}
