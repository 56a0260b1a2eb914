//go:build !race

package auth

import (
	"strings"
	"testing"
	"time"
)

func TestVerifyAllocs(t *testing.T) {
	v := newVerifier(t, Config{HS256Secret: testSecret})
	good := []byte(mint(t, 1234))
	badSig := handmade(t, hs(), std("5"), []byte("wrong"))
	expired := handmade(t, hs(), with(std("5"), "exp", testNow.Add(-time.Hour).Unix()), testSecret)
	// Prime the caches.
	if _, err := v.Verify(testNow, good); err != nil {
		t.Fatal(err)
	}
	_, _ = v.Verify(testNow, badSig)
	_, _ = v.Verify(testNow, expired)

	cases := []struct {
		name string
		tok  []byte
		want error
	}{
		{"cache hit", good, nil},
		{"garbage", []byte("this is not a token at all"), ErrMalformed},
		{"garbage with dots", []byte("a.b.c.d"), ErrMalformed},
		{"missing", nil, ErrMissing},
		{"too long", []byte(strings.Repeat("A", DefaultMaxTokenLen+1)), ErrTooLong},
		{"negative cache signature", badSig, ErrSignature},
		{"negative cache expired", expired, ErrExpired},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := testing.AllocsPerRun(1000, func() {
				if _, err := v.Verify(testNow, c.tok); err != c.want {
					t.Fatalf("err = %v; want %v", err, c.want)
				}
			})
			if n != 0 {
				t.Fatalf("%v allocs per Verify; want 0", n)
			}
		})
	}
}

func TestBearerAllocs(t *testing.T) {
	for _, h := range []string{"Bearer abc.def.ghi", "Basic dXNlcjpwYXNz", "", "Bearer "} {
		hb := []byte(h)
		if n := testing.AllocsPerRun(1000, func() { _, _ = Bearer(hb) }); n != 0 {
			t.Fatalf("Bearer(%q): %v allocs; want 0", h, n)
		}
	}
}

func TestAmbiguousAllocs(t *testing.T) {
	var many strings.Builder
	many.WriteString(`{"sub":"5"`)
	for i := range stackMembers - 1 {
		many.WriteString(`,"c` + strings.Repeat("x", i) + `":[1,{"a":"b"}]`)
	}
	many.WriteString("}")
	for _, in := range []string{`{"alg":"HS256","typ":"JWT"}`, `{"sub":"5","s\u0075b":"6"}`, `{"ſub":"1"}`, many.String()} {
		b := []byte(in)
		if n := testing.AllocsPerRun(1000, func() { _ = ambiguous(b, claimFields) }); n != 0 {
			t.Errorf("ambiguous(%.40s...): %v allocs; want 0", in, n)
		}
	}
}
