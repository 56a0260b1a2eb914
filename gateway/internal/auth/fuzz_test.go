package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jws"
)

// FuzzVerify checks that no input panics Verify and that nothing is accepted
// unless jwx itself verifies its HS256 signature under the configured secret.
func FuzzVerify(f *testing.F) {
	v, good := fuzzVerifier(f, Config{HS256Secret: testSecret, MaxTokenLen: 1024, CacheSize: 4096})
	f.Add([]byte(good))
	f.Add(handmade(f, map[string]any{"alg": "none"}, std("5"), nil))
	f.Add(handmade(f, hs(), std("01"), testSecret))
	f.Add(handmade(f, hs(), with(std("5"), "aud", []any{1, "x"}), testSecret))
	f.Add([]byte("a.b.c"))
	f.Add([]byte(""))
	exp := testNow.Add(time.Hour).Unix()
	f.Add(rawToken(`{"alg":"none","alg":"HS256"}`, fmt.Sprintf(`{"sub":"5","exp":%d}`, exp), testSecret))
	f.Add(rawToken(`{"alg":"HS256"}`, fmt.Sprintf(`{"sub":"5","exp":1,"exp":%d}`, exp), testSecret))
	f.Add(rawToken(`{"alg":"HS256"}`, fmt.Sprintf(`{"sub":"5","s\u0075b":"6","exp":%d}`, exp), testSecret))
	f.Add(rawToken(`{"alg":"HS256"}`, fmt.Sprintf(`{"ſub":"6","exp":%d}`, exp), testSecret))
	f.Fuzz(func(t *testing.T, tok []byte) {
		if got, want := wellFormed(tok), wellFormedRef(tok); got != want {
			t.Fatalf("wellFormed(%q) = %v; want %v", tok, got, want)
		}
		orig := bytes.Clone(tok)
		uid, err := v.Verify(testNow, tok)
		if !bytes.Equal(orig, tok) {
			t.Fatal("Verify modified its input")
		}
		if err != nil {
			if uid != 0 {
				t.Fatalf("uid %d with error %v", uid, err)
			}
			return
		}
		if uid == 0 || uid >= 1<<63 {
			t.Fatalf("accepted uid %d", uid)
		}
		if _, err := jws.Verify(tok, jws.WithKey(jwa.HS256, testSecret)); err != nil {
			t.Fatalf("accepted a token jwx does not verify: %q: %v", tok, err)
		}
	})
}

// FuzzAmbiguous compares the duplicate-name scanner with encoding/json's
// tokenizer on valid JSON, and checks that it never panics on anything else.
func FuzzAmbiguous(f *testing.F) {
	for _, s := range []string{`{"sub":"1","sub":"2"}`, `{"s\u0075b":"1"}`, `{"SUB":1}`, `{"ſub":1}`,
		`{"a":{"b":[1,"]}"]},"a":0}`, `{"\ud83d\ude00":1,"😀":2}`, `{"\ud83d":1,"\ufffd":2}`, `[1]`, `{"alg":"x","ALG":"y"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, fields := range []fieldSet{headerFields, claimFields} {
			got := ambiguous(b, fields)
			if !json.Valid(b) {
				continue
			}
			if want := ambiguousRef(t, b, fields); got != want {
				t.Fatalf("ambiguous(%q, %q) = %v; encoding/json says %v", b, fields.names, got, want)
			}
		}
	})
}

// FuzzBearer checks that Bearer never panics and returns a trimmed,
// non-empty suffix of its input.
func FuzzBearer(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer\tx", "Basic abc", "", "Bearer ", " BEARER  t  "} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, h []byte) {
		tok, ok := Bearer(h)
		if !ok {
			if tok != nil {
				t.Fatalf("token %q with ok=false", tok)
			}
			return
		}
		if len(tok) == 0 || !bytes.Contains(h, tok) || !bytes.HasSuffix(bytes.TrimRight(h, " \t"), tok) {
			t.Fatalf("Bearer(%q) = %q", h, tok)
		}
		if tok[0] == ' ' || tok[0] == '\t' || tok[len(tok)-1] == ' ' || tok[len(tok)-1] == '\t' {
			t.Fatalf("untrimmed token %q", tok)
		}
	})
}

// wellFormedRef is the obvious form of wellFormed.
func wellFormedRef(tok []byte) bool {
	parts := bytes.Split(tok, []byte("."))
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if len(p) == 0 || len(p)%4 == 1 {
			return false
		}
		for _, c := range p {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// FuzzHS256MatchesJWS: the hand-written HS256 check accepts a token only
// when jws.Verify does, with the same payload; it refuses more only for a
// signature spelled with nonzero unused bits (strict base64).
func FuzzHS256MatchesJWS(f *testing.F) {
	v, good := fuzzVerifier(f, Config{HS256Secret: testSecret})
	f.Add([]byte(good))
	f.Add([]byte(good[:len(good)-1] + "B"))
	f.Add([]byte(good + "A"))
	f.Add(rawToken(`{"alg":"HS256"}`, `{}`, testSecret))
	f.Add(rawToken(`{"alg":"HS256"}`, `{"sub":"1"}`, []byte("other")))
	f.Fuzz(func(t *testing.T, tok []byte) {
		if !wellFormed(tok) {
			return
		}
		mine := v.verifyHS256(tok, bytes.IndexByte(tok, '.'))
		theirs, jerr := jws.Verify(tok, jws.WithKey(jwa.HS256, testSecret))
		switch {
		case mine != nil && (jerr != nil || string(mine) != string(theirs)):
			t.Fatalf("%q: accepted with payload %q; jws.Verify: %q, %v", tok, mine, theirs, jerr)
		case mine == nil && jerr == nil:
			sig := tok[bytes.LastIndexByte(tok, '.')+1:]
			if _, err := strictB64.DecodeString(string(sig)); err == nil {
				t.Fatalf("%q: refused; jws.Verify accepted it and its signature is canonical", tok)
			}
		}
	})
}

// fuzzVerifier returns a verifier for cfg, closed when f ends, and a good
// token for user 99 under testSecret.
func fuzzVerifier(f *testing.F, cfg Config) (*Verifier, string) {
	v, err := New(context.Background(), cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(v.Close)
	good, err := MintHS256(testSecret, 99, testNow.Add(time.Hour), nil)
	if err != nil {
		f.Fatal(err)
	}
	return v, good
}
