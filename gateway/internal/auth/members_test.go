package auth

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestAmbiguous(t *testing.T) {
	cases := []struct {
		in   string
		want bool
	}{
		{`{}`, false},
		{` { } `, false},
		{`null`, false},
		{`[{"a":1,"a":2}]`, false},
		{`"x"`, false},
		{`{"sub":"1","exp":2}`, false},
		{`{"sub":"1","sub":"1"}`, true},
		{`{"sub":"1", "exp":2 ,"sub" : "2"}`, true},
		{`{"s\u0075b":"1"}`, false},
		{`{"sub":"1","s\u0075b":"2"}`, true},
		{`{"\u0073\u0075\u0062":"1","sub":"2"}`, true},
		{`{"SUB":"1"}`, true},
		{`{"Exp":1}`, true},
		{`{"ſub":"1"}`, true},
		{`{"\u017fub":"1"}`, true},
		{`{"\u212aid":"1"}`, false}, // not a claim name
		{`{"a\"b":1,"a\u0022b":2}`, true},
		{`{"a\\":1,"a\u005c":2}`, true},
		{`{"a\/b":1,"a/b":2}`, true},
		{`{"\n":1,"\u000a":2}`, true},
		{`{"\n":1,"\u000d":2}`, false},
		{`{"😀":1,"\ud83d\ude00":2}`, true},
		{`{"\ud83d":1,"\ufffd":2}`, true}, // a lone surrogate is U+FFFD to encoding/json
		{`{"\ud83dx":1,"\ufffdx":2}`, true},
		{`{"\ud83d\u0041":1,"\ufffdA":2}`, true},
		{"{\"\xff\":1,\"\ufffd\":2}", true}, // invalid UTF-8 too
		{`{"name":1,"Name":2}`, false},
		{`{"a":{"b":1,"b":2},"c":[1,{"d":"}"}],"e":"]}"}`, false},
		{`{"a":{"b":1,"b":2},"c":[1,{"d":"}"}],"e":"]}","a":0}`, true},
		{`{"a":true,"b":false,"c":null,"d":-1.5e3,"a":0}`, true},
		{`{"ab":1,"a":2,"b":3}`, false},
		{`{"a":1,"ab":2}`, false},
	}
	for _, c := range cases {
		if got := ambiguous([]byte(c.in), claimFields); got != c.want {
			t.Errorf("ambiguous(%s) = %v; want %v", c.in, got, c.want)
		}
		if !json.Valid([]byte(c.in)) {
			t.Errorf("case %s is not valid JSON", c.in)
		} else if ref := ambiguousRef(t, []byte(c.in), claimFields); ref != c.want {
			t.Errorf("ambiguousRef(%s) = %v; want %v", c.in, ref, c.want)
		}
	}
}

func TestAmbiguousManyMembers(t *testing.T) {
	for _, n := range []int{2, 8, 9, 31, 32, 33, 200} {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"k`)
			b.WriteString(strings.Repeat("x", i))
			b.WriteString(`":0`)
		}
		distinct := b.String() + "}"
		if ambiguous([]byte(distinct), claimFields) {
			t.Errorf("%d distinct members: ambiguous", n)
		}
		for _, dup := range []int{0, n / 2, n - 1} {
			in := distinct[:len(distinct)-1] + `,"k` + strings.Repeat("x", dup) + `":1}`
			if !ambiguous([]byte(in), claimFields) {
				t.Errorf("%d members, member %d repeated: not ambiguous", n, dup)
			}
		}
	}
}

// ambiguousRef is ambiguous written with encoding/json's own tokenizer: its
// unescaping of member names, and bytes.EqualFold, which is how encoding/json
// matches a name to a struct field.
func ambiguousRef(t testing.TB, b []byte, fields fieldSet) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // 1e1000 is valid JSON, not a float64
	tok, err := dec.Token()
	if err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	if tok != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		name := tok.(string)
		if seen[name] {
			return true
		}
		seen[name] = true
		for _, f := range fields.names {
			if name != f && bytes.EqualFold([]byte(name), []byte(f)) {
				return true
			}
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
	}
	return false
}
