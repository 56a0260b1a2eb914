package orderevent

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"flashsale/lua"
)

// xadd matches a script's XADD call up to its closing parenthesis.
var xadd = regexp.MustCompile(`(?s)redis\.call\('XADD', [^,]+, '\*',(.*?)\)\n`)

// The scripts write the journal fields FromFields reads: every field name an
// XADD of reserve.lua, reserve_many.lua or act.lua writes is one of Fields,
// and each script writes every field FromFields requires.
func TestScriptsWriteTheFields(t *testing.T) {
	// The reserve scripts write the second version (no sale: see FromFields).
	required := map[string][]string{
		"reserve.lua":      {FieldType, FieldOrder, FieldItem, FieldUser, FieldCreated, FieldExpires},
		"reserve_many.lua": {FieldType, FieldOrder, FieldItem, FieldUser, FieldCreated, FieldExpires},
		"act.lua":          {FieldType, FieldOrder, FieldSale, FieldItem, FieldUser, FieldCreated, FieldExpires},
	}
	for name, src := range map[string]string{"reserve.lua": lua.Reserve, "reserve_many.lua": lua.ReserveMany, "act.lua": lua.Act} {
		m := xadd.FindStringSubmatch(src)
		if m == nil {
			t.Fatalf("%s: no XADD found", name)
		}
		// The arguments after '*' alternate field, value; a field is a literal.
		args := strings.Split(m[1], ",")
		var got []string
		for i := 0; i < len(args); i += 2 {
			f := strings.TrimSpace(args[i])
			if len(f) < 3 || f[0] != '\'' || f[len(f)-1] != '\'' {
				t.Fatalf("%s: XADD field %d is %q, not a literal", name, i/2, f)
			}
			got = append(got, f[1:len(f)-1])
			if !slices.Contains(Fields[:], got[len(got)-1]) {
				t.Errorf("%s journals field %s, which FromFields does not know", name, f)
			}
		}
		for _, f := range required[name] {
			if !slices.Contains(got, f) {
				t.Errorf("%s does not journal field %q (its XADD names %v)", name, f, got)
			}
		}
	}
}
