package stock

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"flashsale/lua"
)

// codeDecl matches a script's declaration of its reply codes:
// local NAME, NAME = 0, 1.
var codeDecl = regexp.MustCompile(`(?m)^local ((?:[A-Z_]+, )*[A-Z_]+) = ((?:-?\d+, )*-?\d+)\n`)

// scriptCodes returns the reply codes a script declares, by name.
func scriptCodes(t *testing.T, name, src string) map[string]int64 {
	t.Helper()
	m := codeDecl.FindStringSubmatch(src)
	if m == nil {
		t.Fatalf("%s declares no reply codes (local NAME, ... = 0, ...)", name)
	}
	names, nums := strings.Split(m[1], ", "), strings.Split(m[2], ", ")
	if len(names) != len(nums) {
		t.Fatalf("%s: %d names for %d codes", name, len(names), len(nums))
	}
	out := map[string]int64{}
	for i, n := range names {
		out[n], _ = strconv.ParseInt(nums[i], 10, 64)
	}
	return out
}

// bareReturn matches a reply given as a number instead of a name.
var bareReturn = regexp.MustCompile(`return \{?-?\d+[,}\n]`)

// Each script's reply codes are named at its top, and the Go side numbers
// them alike: stock.Outcome for reserve.lua and reserve_many.lua,
// VoidOutcome for void.lua and void_act.lua (FROZEN is VoidFrozen); the
// scripts answer by those names, never by a bare number; act.lua answers only
// the strings Act knows.
func TestReplyCodesMatchTheScripts(t *testing.T) {
	want := map[string]int64{}
	for o := range numOutcomes {
		want[outcomeNames[o]] = int64(o)
	}
	wantVoid := map[string]int64{"FROZEN": int64(VoidFrozen)}
	for o, n := range voidNames {
		wantVoid[n] = int64(o)
	}
	for _, s := range []struct {
		name, src string
		want      map[string]int64
	}{
		{"reserve.lua", lua.Reserve, want}, {"reserve_many.lua", lua.ReserveMany, want},
		{"void.lua", lua.Void, wantVoid}, {"void_act.lua", lua.VoidAct, wantVoid},
	} {
		got := scriptCodes(t, s.name, s.src)
		for n, c := range s.want {
			if g, ok := got[n]; !ok || g != c {
				t.Errorf("%s: %s is %d (declared %v), Go has %d", s.name, n, g, ok, c)
			}
		}
		if len(got) != len(s.want) {
			t.Errorf("%s declares %v; Go knows %v", s.name, got, s.want)
		}
		if b := bareReturn.FindString(s.src); b != "" {
			t.Errorf("%s answers a bare number (%q): name it", s.name, b)
		}
	}
	for _, m := range regexp.MustCompile(`return '([A-Z]+)'`).FindAllStringSubmatch(lua.Act, -1) {
		if !slices.Contains(actReplies[:], m[1]) {
			t.Errorf("act.lua answers %q, which Act does not know", m[1])
		}
	}
}
