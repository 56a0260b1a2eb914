package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"hash/maphash"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
)

var (
	testSecret = []byte("test-secret-0123456789abcdef0123")
	testNow    = time.Unix(1_900_000_000, 0)
)

// testKeys are generated once; RSA generation is slow.
type testKeys struct {
	rsa   *rsa.PrivateKey
	ec    *ecdsa.PrivateKey
	ed    ed25519.PrivateKey
	rsa2  *rsa.PrivateKey // not in the set
	noAlg *ecdsa.PrivateKey
}

var (
	keysOnce sync.Once
	keys     testKeys
)

func getKeys(t testing.TB) testKeys {
	keysOnce.Do(func() {
		var err error
		if keys.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if keys.rsa2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if keys.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
		if keys.noAlg, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
		if _, keys.ed, err = ed25519.GenerateKey(rand.Reader); err != nil {
			panic(err)
		}
	})
	return keys
}

// publicJWK converts a raw public key to a JWK with kid and (if non-empty) alg.
func publicJWK(t testing.TB, raw any, kid string, alg jwa.SignatureAlgorithm) jwk.Key {
	t.Helper()
	k, err := jwk.FromRaw(raw)
	if err != nil {
		t.Fatal(err)
	}
	must(t, k.Set(jwk.KeyIDKey, kid))
	if alg != "" {
		must(t, k.Set(jwk.AlgorithmKey, alg))
	}
	return k
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// jwksJSON is the public key set used by the tests: rsa (RS256), ec (ES256),
// ed (EdDSA), a key without alg, and an oct key that must be ignored.
func jwksJSON(t testing.TB) []byte {
	k := getKeys(t)
	set := jwk.NewSet()
	must(t, set.AddKey(publicJWK(t, &k.rsa.PublicKey, "rsa1", jwa.RS256)))
	must(t, set.AddKey(publicJWK(t, &k.ec.PublicKey, "ec1", jwa.ES256)))
	must(t, set.AddKey(publicJWK(t, k.ed.Public(), "ed1", jwa.EdDSA)))
	must(t, set.AddKey(publicJWK(t, &k.noAlg.PublicKey, "noalg", "")))
	must(t, set.AddKey(publicJWK(t, []byte("oct-secret"), "oct1", jwa.HS256)))
	b, err := json.Marshal(set)
	must(t, err)
	return b
}

func writeJWKS(t testing.TB) string {
	p := filepath.Join(t.TempDir(), "jwks.json")
	must(t, os.WriteFile(p, jwksJSON(t), 0o600))
	return p
}

func newVerifier(t testing.TB, cfg Config) *Verifier {
	t.Helper()
	v, err := New(context.Background(), cfg)
	must(t, err)
	t.Cleanup(v.Close)
	return v
}

// sign signs claims with a raw private key under alg and the given kid
// (omitted when empty) using jwx.
func sign(t testing.TB, alg jwa.SignatureAlgorithm, key any, kid string, claims map[string]any) []byte {
	t.Helper()
	payload, err := json.Marshal(claims)
	must(t, err)
	hdr := jws.NewHeaders()
	must(t, hdr.Set(jws.TypeKey, "JWT"))
	if kid != "" {
		must(t, hdr.Set(jws.KeyIDKey, kid))
	}
	b, err := jws.Sign(payload, jws.WithKey(alg, key, jws.WithProtectedHeaders(hdr)))
	must(t, err)
	return b
}

// handmade builds a token from a header and claims, MACed with HMAC-SHA256
// under secret (nil: signature "c2ln").
func handmade(t testing.TB, header, claims map[string]any, secret []byte) []byte {
	t.Helper()
	h, err := json.Marshal(header)
	must(t, err)
	c, err := json.Marshal(claims)
	must(t, err)
	enc := base64.RawURLEncoding
	in := enc.EncodeToString(h) + "." + enc.EncodeToString(c)
	sig := "c2ln"
	if secret != nil {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(in))
		sig = enc.EncodeToString(m.Sum(nil))
	}
	return []byte(in + "." + sig)
}

func std(sub string) map[string]any {
	return map[string]any{"sub": sub, "exp": testNow.Add(time.Hour).Unix()}
}

func with(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func hs() map[string]any { return map[string]any{"alg": "HS256", "typ": "JWT"} }

func TestVerifyAcceptsEachAlgorithm(t *testing.T) {
	k := getKeys(t)
	v := newVerifier(t, Config{HS256Secret: testSecret, JWKS: writeJWKS(t)})
	hsTok, err := MintHS256(testSecret, 42, testNow.Add(time.Hour), nil)
	must(t, err)
	cases := []struct {
		name string
		tok  []byte
		want uint64
	}{
		{"HS256", []byte(hsTok), 42},
		{"RS256", sign(t, jwa.RS256, k.rsa, "rsa1", std("7")), 7},
		{"ES256", sign(t, jwa.ES256, k.ec, "ec1", std("8")), 8},
		{"EdDSA", sign(t, jwa.EdDSA, k.ed, "ed1", std("9223372036854775807")), 1<<63 - 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for range 2 { // the second call is a cache hit
				uid, err := v.Verify(testNow, c.tok)
				if err != nil || uid != c.want {
					t.Fatalf("Verify = %d, %v; want %d, nil", uid, err, c.want)
				}
			}
		})
	}
}

func TestVerifyAttackMatrix(t *testing.T) {
	k := getKeys(t)
	v := newVerifier(t, Config{HS256Secret: testSecret, JWKS: writeJWKS(t), MaxTokenLen: 2048})
	rsaPubDER, err := x509.MarshalPKIXPublicKey(&k.rsa.PublicKey)
	must(t, err)
	rsaPubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: rsaPubDER})
	rsaJWK, err := json.Marshal(publicJWK(t, &k.rsa.PublicKey, "rsa1", jwa.RS256))
	must(t, err)
	good := handmade(t, hs(), std("5"), testSecret)
	parts := strings.Split(string(good), ".")
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"6","exp":1900003600}`)) + "." + parts[2]

	cases := []struct {
		name string
		tok  []byte
		want error
	}{
		{"empty", nil, ErrMissing},
		{"too long", []byte(strings.Repeat("a", 2049)), ErrTooLong},
		{"garbage", []byte("not a token"), ErrMalformed},
		{"one dot", []byte("abc.def"), ErrMalformed},
		{"three dots", []byte("abc.def.ghi.jkl"), ErrMalformed},
		{"empty segment", []byte("abc..ghi"), ErrMalformed},
		{"padding", []byte(parts[0] + "." + parts[1] + "." + parts[2] + "="), ErrMalformed},
		{"std base64 alphabet", []byte("ab+c.def.ghi"), ErrMalformed},
		{"impossible base64 length", []byte("abcde.def.ghi"), ErrMalformed},
		{"header not json", []byte("bm90anNvbg.e30.c2ln"), ErrMalformed},
		{"header without alg", handmade(t, map[string]any{"typ": "JWT"}, std("5"), testSecret), ErrMalformed},
		{"alg none empty sig", []byte(strings.Join(strings.Split(string(handmade(t, map[string]any{"alg": "none"}, std("5"), nil)), ".")[:2], ".") + "."), ErrMalformed},
		{"alg none", handmade(t, map[string]any{"alg": "none"}, std("5"), nil), ErrAlgorithm},
		{"alg None", handmade(t, map[string]any{"alg": "None"}, std("5"), nil), ErrAlgorithm},
		{"alg HS512", handmade(t, map[string]any{"alg": "HS512"}, std("5"), testSecret), ErrAlgorithm},
		{"alg PS256", handmade(t, map[string]any{"alg": "PS256", "kid": "rsa1"}, std("5"), nil), ErrAlgorithm},
		{"crit header", handmade(t, map[string]any{"alg": "HS256", "crit": []string{"exp"}, "exp": 1}, std("5"), testSecret), ErrMalformed},
		{"b64 false", handmade(t, map[string]any{"alg": "HS256", "b64": false}, std("5"), testSecret), ErrMalformed},
		{"HS256 wrong secret", handmade(t, hs(), std("5"), []byte("wrong")), ErrSignature},
		{"HS256 tampered payload", []byte(tampered), ErrSignature},
		{"HS/RS confusion PEM", handmade(t, map[string]any{"alg": "HS256", "kid": "rsa1"}, std("5"), rsaPubPEM), ErrSignature},
		{"HS/RS confusion DER", handmade(t, map[string]any{"alg": "HS256", "kid": "rsa1"}, std("5"), rsaPubDER), ErrSignature},
		{"HS/RS confusion JWK", handmade(t, map[string]any{"alg": "HS256", "kid": "rsa1"}, std("5"), rsaJWK), ErrSignature},
		{"JWKS oct key never verifies", handmade(t, map[string]any{"alg": "HS256", "kid": "oct1"}, std("5"), []byte("oct-secret")), ErrSignature},
		{"RS256 unknown kid", sign(t, jwa.RS256, k.rsa, "nope", std("5")), ErrUnknownKey},
		{"RS256 no kid", sign(t, jwa.RS256, k.rsa, "", std("5")), ErrUnknownKey},
		{"RS256 wrong key", sign(t, jwa.RS256, k.rsa2, "rsa1", std("5")), ErrSignature},
		{"key without alg dropped", sign(t, jwa.ES256, k.noAlg, "noalg", std("5")), ErrUnknownKey},
		{"oct key as RS256", sign(t, jwa.RS256, k.rsa, "oct1", std("5")), ErrUnknownKey},
		{"ES256 header on RSA key", sign(t, jwa.ES256, k.ec, "rsa1", std("5")), ErrAlgorithm},
		{"RS256 header on EC key", sign(t, jwa.RS256, k.rsa, "ec1", std("5")), ErrAlgorithm},
		{"EdDSA header on EC key", sign(t, jwa.EdDSA, k.ed, "ec1", std("5")), ErrAlgorithm},
		{"expired", handmade(t, hs(), with(std("5"), "exp", testNow.Add(-time.Hour).Unix()), testSecret), ErrExpired},
		{"no exp", handmade(t, hs(), with(std("5"), "exp", nil), testSecret), ErrClaims},
		{"exp string", handmade(t, hs(), with(std("5"), "exp", "1900003600"), testSecret), ErrMalformed},
		{"no sub", handmade(t, hs(), with(std("5"), "sub", nil), testSecret), ErrClaims},
		{"sub zero", handmade(t, hs(), std("0"), testSecret), ErrClaims},
		{"sub negative", handmade(t, hs(), std("-5"), testSecret), ErrClaims},
		{"sub plus", handmade(t, hs(), std("+5"), testSecret), ErrClaims},
		{"sub leading zero", handmade(t, hs(), std("05"), testSecret), ErrClaims},
		{"sub not a number", handmade(t, hs(), std("alice"), testSecret), ErrClaims},
		{"sub too big", handmade(t, hs(), std("9223372036854775808"), testSecret), ErrClaims},
		{"sub 2^64", handmade(t, hs(), std("18446744073709551616"), testSecret), ErrClaims},
		{"sub json number", handmade(t, hs(), with(std("5"), "sub", 5), testSecret), ErrMalformed},
		{"nbf future", handmade(t, hs(), with(std("5"), "nbf", testNow.Add(time.Minute).Unix()), testSecret), ErrNotYetValid},
		{"iat future", handmade(t, hs(), with(std("5"), "iat", testNow.Add(time.Minute).Unix()), testSecret), ErrNotYetValid},
		{"payload not object", []byte(parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`[1]`)) + "." + parts[2]), ErrSignature},
		// The HS256 MAC is checked by hand (verifyHS256): every length and
		// alteration of the signature segment must fail.
		{"HS256 signature truncated", []byte(parts[0] + "." + parts[1] + "." + parts[2][:40]), ErrSignature},
		{"HS256 signature one byte short", []byte(parts[0] + "." + parts[1] + "." + b64(sigBytes(parts[2])[:31])), ErrSignature},
		{"HS256 signature one byte long", []byte(parts[0] + "." + parts[1] + "." + b64(append(sigBytes(parts[2]), 0))), ErrSignature},
		{"HS256 signature doubled", []byte(parts[0] + "." + parts[1] + "." + parts[2] + parts[2]), ErrSignature},
		{"HS256 signature last bit flipped", []byte(parts[0] + "." + parts[1] + "." + b64(flipLast(sigBytes(parts[2])))), ErrSignature},
		{"HS256 signature of the header only", []byte(parts[0] + "." + parts[1] + "." + b64(macOf(parts[0]))), ErrSignature},
		{"HS256 signature without the dot", []byte(parts[0] + "." + parts[1] + "." + b64(macOf(parts[0]+parts[1]))), ErrSignature},
		{"HS256 non-canonical final character", []byte(parts[0] + "." + parts[1] + "." + nonCanonical(parts[2])), ErrSignature},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for range 2 { // the second call may come from the negative cache
				uid, err := v.Verify(testNow, c.tok)
				if err != c.want || uid != 0 {
					t.Fatalf("Verify = %d, %v; want 0, %v", uid, err, c.want)
				}
			}
		})
	}

	t.Run("HS256 without secret", func(t *testing.T) {
		v := newVerifier(t, Config{JWKS: writeJWKS(t)})
		for _, secret := range [][]byte{rsaPubPEM, testSecret} {
			tok := handmade(t, map[string]any{"alg": "HS256", "kid": "rsa1"}, std("5"), secret)
			if _, err := v.Verify(testNow, tok); err != ErrAlgorithm {
				t.Fatalf("err = %v; want ErrAlgorithm", err)
			}
		}
	})
	t.Run("RS256 without JWKS", func(t *testing.T) {
		v := newVerifier(t, Config{HS256Secret: testSecret})
		if _, err := v.Verify(testNow, sign(t, jwa.RS256, k.rsa, "rsa1", std("5"))); err != ErrAlgorithm {
			t.Fatalf("err = %v; want ErrAlgorithm", err)
		}
	})
}

func TestVerifyIssuerAudience(t *testing.T) {
	v := newVerifier(t, Config{HS256Secret: testSecret, Issuer: "https://idp.example", Audience: "flashsale"})
	cases := []struct {
		name   string
		claims map[string]any
		want   error
	}{
		{"both", with(std("5"), "iss", "https://idp.example", "aud", "flashsale"), nil},
		{"aud list", with(std("5"), "iss", "https://idp.example", "aud", []string{"other", "flashsale"}), nil},
		{"no iss", with(std("5"), "aud", "flashsale"), ErrIssuer},
		{"wrong iss", with(std("5"), "iss", "https://evil.example", "aud", "flashsale"), ErrIssuer},
		{"no aud", with(std("5"), "iss", "https://idp.example"), ErrAudience},
		{"wrong aud", with(std("5"), "iss", "https://idp.example", "aud", "other"), ErrAudience},
		{"wrong aud list", with(std("5"), "iss", "https://idp.example", "aud", []string{"a", "b"}), ErrAudience},
		{"aud number", with(std("5"), "iss", "https://idp.example", "aud", 5), ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := v.Verify(testNow, handmade(t, hs(), c.claims, testSecret))
			if err != c.want {
				t.Fatalf("err = %v; want %v", err, c.want)
			}
		})
	}
}

func TestVerifySkew(t *testing.T) {
	cases := []struct {
		name string
		skew time.Duration
		exp  time.Duration // exp relative to now
		nbf  time.Duration
		want error
	}{
		{"exp 29s ago", 0, -29 * time.Second, 0, nil},
		{"exp 30s ago", 0, -30 * time.Second, 0, nil},
		{"exp 31s ago", 0, -31 * time.Second, 0, ErrExpired},
		{"skew capped at 30s", time.Hour, -31 * time.Second, 0, ErrExpired},
		{"skew 5s", 5 * time.Second, -6 * time.Second, 0, ErrExpired},
		{"no skew", -1, -time.Second, 0, ErrExpired},
		{"nbf in 29s", 0, time.Hour, 29 * time.Second, nil},
		{"nbf in 31s", 0, time.Hour, 31 * time.Second, ErrNotYetValid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := newVerifier(t, Config{HS256Secret: testSecret, Skew: c.skew})
			claims := with(std("5"), "exp", testNow.Add(c.exp).Unix())
			if c.nbf != 0 {
				claims["nbf"] = testNow.Add(c.nbf).Unix()
			}
			_, err := v.Verify(testNow, handmade(t, hs(), claims, testSecret))
			if err != c.want {
				t.Fatalf("err = %v; want %v", err, c.want)
			}
		})
	}
}

func TestCacheHonoursExp(t *testing.T) {
	v := newVerifier(t, Config{HS256Secret: testSecret})
	exp := testNow.Add(time.Minute)
	tok, err := MintHS256(testSecret, 77, exp, nil)
	must(t, err)
	if uid, err := v.Verify(testNow, []byte(tok)); err != nil || uid != 77 {
		t.Fatalf("Verify = %d, %v", uid, err)
	}
	if n := v.pos.len(); n != 1 {
		t.Fatalf("cache holds %d entries; want 1", n)
	}
	last := exp.Add(DefaultSkew)
	if uid, err := v.Verify(last, []byte(tok)); err != nil || uid != 77 {
		t.Fatalf("Verify at exp+skew = %d, %v", uid, err)
	}
	if uid, err := v.Verify(last.Add(time.Nanosecond), []byte(tok)); err != ErrExpired || uid != 0 {
		t.Fatalf("Verify after exp+skew = %d, %v; want ErrExpired", uid, err)
	}
	if n := v.pos.len(); n != 0 {
		t.Fatalf("expired entry not evicted: %d entries", n)
	}
	// Verified again from scratch, still expired; remembered in the negative cache.
	if _, err := v.Verify(last.Add(time.Second), []byte(tok)); err != ErrExpired {
		t.Fatalf("err = %v; want ErrExpired", err)
	}
}

func TestCacheNeverConfusesTokens(t *testing.T) {
	v := newVerifier(t, Config{HS256Secret: testSecret})
	a := []byte(mint(t, 1))
	b := []byte(mint(t, 2))
	// Plant b's hash with a's bytes: a lookup of b must not return user 1.
	v.pos.put(maphash64(v, b), string(a), 1, testNow.Add(time.Hour).UnixNano(), testNow.UnixNano())
	if uid, err := v.Verify(testNow, b); err != nil || uid != 2 {
		t.Fatalf("Verify(b) = %d, %v; want 2", uid, err)
	}
}

func TestCacheBound(t *testing.T) {
	const size = 256
	v := newVerifier(t, Config{HS256Secret: testSecret, CacheSize: size})
	limit := v.pos.perShard * cacheShards
	for i := range 10 * size {
		tok := mint(t, uint64(i+1))
		if uid, err := v.Verify(testNow, []byte(tok)); err != nil || uid != uint64(i+1) {
			t.Fatalf("Verify = %d, %v", uid, err)
		}
		if n := v.pos.len(); n > limit {
			t.Fatalf("cache grew to %d entries; bound %d", n, limit)
		}
	}
	if n := v.pos.len(); n < size/2 {
		t.Fatalf("cache holds only %d entries", n)
	}
	// Bad tokens go to the bounded negative cache.
	nlimit := v.neg.perShard * cacheShards
	for i := range 10 * nlimit {
		tok := handmade(t, hs(), std(fmt.Sprint(i+1)), []byte("wrong"))
		if _, err := v.Verify(testNow, tok); err != ErrSignature {
			t.Fatalf("err = %v", err)
		}
	}
	if n := v.neg.len(); n > nlimit {
		t.Fatalf("negative cache grew to %d entries; bound %d", n, nlimit)
	}
}

// TestCacheBytesPerEntry measures the memory of the positive cache with
// 190-byte tokens and holds it to the bound the docs rely on.
func TestCacheBytesPerEntry(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates ~60 MiB")
	}
	const n = 200_000
	c := newTokenCache(1 << 20)
	base := strings.Repeat("x", 180)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		tok := fmt.Sprintf("%s%010d", base, i)
		c.put(uint64(i)*0x9e3779b97f4a7c15, tok, uint64(i), 1, 0)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("token cache: %.0f bytes per entry with 190-byte tokens (%.1f MiB for 500,000)", per, per*500_000/(1<<20))
	runtime.KeepAlive(c)
	// The package doc quotes about 255 bytes; the slot table's growth moves it.
	if per > 320 {
		t.Fatalf("%.0f bytes per entry, want at most 320", per)
	}
}

func TestJWKSURL(t *testing.T) {
	k := getKeys(t)
	var body atomic.Value
	body.Store(jwksJSON(t))
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body.Load().([]byte))
	}))
	defer srv.Close()
	v := newVerifier(t, Config{JWKS: srv.URL + "/jwks.json", JWKSRefresh: time.Hour})
	for _, c := range []struct {
		alg jwa.SignatureAlgorithm
		key any
		kid string
	}{{jwa.RS256, k.rsa, "rsa1"}, {jwa.ES256, k.ec, "ec1"}, {jwa.EdDSA, k.ed, "ed1"}} {
		if uid, err := v.Verify(testNow, sign(t, c.alg, c.key, c.kid, std("31"))); err != nil || uid != 31 {
			t.Fatalf("%s: Verify = %d, %v", c.alg, uid, err)
		}
	}
	if _, err := v.Verify(testNow, handmade(t, map[string]any{"alg": "HS256", "kid": "oct1"}, std("5"), []byte("oct-secret"))); err != ErrAlgorithm {
		t.Fatalf("HS256 via JWKS: err = %v; want ErrAlgorithm", err)
	}

	// A key rotated in is found after an unknown kid triggers a refresh; the
	// unknown-kid refusal is not remembered.
	tok := sign(t, jwa.RS256, k.rsa2, "rsa2", std("32"))
	if _, err := v.Verify(testNow, tok); err != ErrUnknownKey {
		t.Fatalf("err = %v; want ErrUnknownKey", err)
	}
	var set map[string][]json.RawMessage
	must(t, json.Unmarshal(body.Load().([]byte), &set))
	k2, err := json.Marshal(publicJWK(t, &k.rsa2.PublicKey, "rsa2", jwa.RS256))
	must(t, err)
	set["keys"] = append(set["keys"], k2)
	b, err := json.Marshal(set)
	must(t, err)
	body.Store(b)
	before := fetches.Load()
	now := testNow.Add(unknownKidRefresh + time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for {
		uid, err := v.Verify(now, tok)
		if err == nil && uid == 32 {
			break
		}
		if err != ErrUnknownKey {
			t.Fatalf("err = %v; want ErrUnknownKey until the refresh", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("rotated key not picked up; %d fetches since", fetches.Load()-before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.json")
	must(t, os.WriteFile(empty, []byte(`{"keys":[]}`), 0o600))
	bad := filepath.Join(dir, "bad.json")
	must(t, os.WriteFile(bad, []byte(`{`), 0o600))
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	for _, cfg := range []Config{
		{},
		{JWKS: filepath.Join(dir, "missing.json")},
		{JWKS: empty},
		{JWKS: bad},
		{JWKS: srv.URL},
	} {
		if v, err := New(context.Background(), cfg); err == nil {
			v.Close()
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}

func TestBearer(t *testing.T) {
	cases := []struct {
		in   string
		tok  string
		okay bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"BEARER  abc ", "abc", true},
		{" Bearer\tabc", "abc", true},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Bearer    ", "", false},
		{"Bearerabc", "", false},
		{"Basic abc", "", false},
		{"Bearex abc", "", false},
		{"", "", false},
		{"Token abc", "", false},
	}
	for _, c := range cases {
		tok, ok := Bearer([]byte(c.in))
		if ok != c.okay || string(tok) != c.tok {
			t.Errorf("Bearer(%q) = %q, %v; want %q, %v", c.in, tok, ok, c.tok, c.okay)
		}
	}
}

func TestMintHS256(t *testing.T) {
	tok, err := MintHS256(testSecret, 9, testNow.Add(time.Hour), map[string]any{"iss": "x", "aud": "y"})
	must(t, err)
	v := newVerifier(t, Config{HS256Secret: testSecret, Issuer: "x", Audience: "y"})
	if uid, err := v.Verify(testNow, []byte(tok)); err != nil || uid != 9 {
		t.Fatalf("Verify = %d, %v", uid, err)
	}
}

func TestVerifyConcurrent(t *testing.T) {
	v := newVerifier(t, Config{HS256Secret: testSecret, CacheSize: 128})
	toks := make([][]byte, 300)
	for i := range toks {
		toks[i] = []byte(mint(t, uint64(i+1)))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				j := (i*7 + g) % len(toks)
				if uid, err := v.Verify(testNow, toks[j]); err != nil || uid != uint64(j+1) {
					t.Errorf("Verify = %d, %v", uid, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func mint(t testing.TB, sub uint64) string {
	t.Helper()
	tok, err := MintHS256(testSecret, sub, testNow.Add(time.Hour), nil)
	must(t, err)
	return tok
}

func maphash64(v *Verifier, b []byte) uint64 { return maphash.Bytes(v.seed, b) }

// TestHealableRefusalsNotCached: a refusal that time or a key refresh can
// heal is checked again on the next call.
func TestHealableRefusalsNotCached(t *testing.T) {
	v := newVerifier(t, Config{HS256Secret: testSecret})
	tok := handmade(t, hs(), with(std("5"), "nbf", testNow.Add(40*time.Second).Unix()), testSecret)
	if _, err := v.Verify(testNow, tok); err != ErrNotYetValid {
		t.Fatalf("err = %v; want ErrNotYetValid", err)
	}
	if uid, err := v.Verify(testNow.Add(15*time.Second), tok); err != nil || uid != 5 {
		t.Fatalf("Verify once valid = %d, %v", uid, err)
	}
	for c := codeOK; int(c) < len(codeErrs); c++ {
		want := c != codeOK && c != codeMissing && c != codeTooLong &&
			c != codeUnknownKey && c != codeKeyUnavailable && c != codeNotYetValid
		if c.permanent() != want {
			t.Errorf("%v: permanent = %v", c.err(), c.permanent())
		}
	}
}

// rawToken builds a token from header and claims JSON written out by hand
// (so that they can repeat a member), MACed with HMAC-SHA256 under secret.
func rawToken(header, claims string, secret []byte) []byte {
	enc := base64.RawURLEncoding
	in := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(claims))
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(in))
	return []byte(in + "." + enc.EncodeToString(m.Sum(nil)))
}

// rs256Raw signs claims JSON under a hand-written header with the RSA key.
func rs256Raw(t testing.TB, key *rsa.PrivateKey, header, claims string) []byte {
	t.Helper()
	enc := base64.RawURLEncoding
	in := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(claims))
	sum := sha256.Sum256([]byte(in))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	must(t, err)
	return []byte(in + "." + enc.EncodeToString(sig))
}

// TestVerifyRefusesAmbiguousJSON: a header or claims set that another JSON
// parser could read differently (a repeated member name, or a name that only
// case-insensitively matches one we read) is malformed.
func TestVerifyRefusesAmbiguousJSON(t *testing.T) {
	k := getKeys(t)
	v := newVerifier(t, Config{HS256Secret: testSecret, JWKS: writeJWKS(t), Audience: "flashsale", MaxTokenLen: 4096})
	past, future := testNow.Add(-time.Hour).Unix(), testNow.Add(time.Hour).Unix()
	claims := func(members string) string {
		return fmt.Sprintf(`{"sub":"5","exp":%d,"aud":"flashsale"%s}`, future, members)
	}
	const hdr = `{"alg":"HS256","typ":"JWT"}`
	var many strings.Builder
	for i := range 40 {
		fmt.Fprintf(&many, `,"c%d":%d`, i, i)
	}
	cases := []struct {
		name    string
		tok     []byte
		want    error
		wantUID uint64
	}{
		{name: "exp past then future", tok: rawToken(hdr, fmt.Sprintf(`{"sub":"5","aud":"flashsale","exp":%d,"exp":%d}`, past, future), testSecret), want: ErrMalformed},
		{name: "sub twice", tok: rawToken(hdr, claims(`,"sub":"6"`), testSecret), want: ErrMalformed},
		{name: "sub twice, second escaped", tok: rawToken(hdr, claims(`,"s\u0075b":"6"`), testSecret), want: ErrMalformed},
		{name: "sub and SUB", tok: rawToken(hdr, claims(`,"SUB":"6"`), testSecret), want: ErrMalformed},
		{name: "sub and long-s ſub", tok: rawToken(hdr, claims(`,"ſub":"6"`), testSecret), want: ErrMalformed},
		{name: "only Sub", tok: rawToken(hdr, fmt.Sprintf(`{"Sub":"5","exp":%d,"aud":"flashsale"}`, future), testSecret), want: ErrMalformed},
		{name: "aud twice", tok: rawToken(hdr, claims(`,"aud":"other"`), testSecret), want: ErrMalformed},
		{name: "unknown claim twice", tok: rawToken(hdr, claims(`,"x":1,"x":2`), testSecret), want: ErrMalformed},
		{name: "claim twice, one as surrogate pair", tok: rawToken(hdr, claims(`,"😀":1,"\ud83d\ude00":2`), testSecret), want: ErrMalformed},
		{name: "duplicate after 40 members", tok: rawToken(hdr, claims(many.String()+`,"c7":0`), testSecret), want: ErrMalformed},
		{name: "alg none then HS256", tok: rawToken(`{"alg":"none","alg":"HS256"}`, claims(""), testSecret), want: ErrMalformed},
		{name: "alg HS256 then none", tok: rawToken(`{"alg":"HS256","alg":"none"}`, claims(""), testSecret), want: ErrMalformed},
		{name: "alg and ALG", tok: rawToken(`{"alg":"HS256","ALG":"HS256"}`, claims(""), testSecret), want: ErrMalformed},
		{name: "kid and Kelvin-sign kid", tok: rawToken(`{"alg":"HS256","kid":"a","\u212aid":"b"}`, claims(""), testSecret), want: ErrMalformed},
		{name: "typ twice", tok: rawToken(`{"alg":"HS256","typ":"JWT","typ":"JWT"}`, claims(""), testSecret), want: ErrMalformed},
		{name: "RS256 aud twice", tok: rs256Raw(t, k.rsa, `{"alg":"RS256","kid":"rsa1"}`, fmt.Sprintf(`{"sub":"5","exp":%d,"aud":"other","aud":"flashsale"}`, future)), want: ErrMalformed},
		{name: "RS256 kid twice", tok: rs256Raw(t, k.rsa, `{"alg":"RS256","kid":"nope","kid":"rsa1"}`, claims("")), want: ErrMalformed},
		{name: "RS256 good", tok: rs256Raw(t, k.rsa, `{"alg":"RS256","kid":"rsa1"}`, claims("")), wantUID: 5},

		// Not ambiguous: names that differ, escapes of a name we read, nested
		// objects (never decoded), many members.
		{name: "escaped sub alone", tok: rawToken(hdr, fmt.Sprintf(`{"s\u0075b":"5","exp":%d,"aud":"flashsale"}`, future), testSecret), wantUID: 5},
		{name: "name and Name", tok: rawToken(hdr, claims(`,"name":"a","Name":"b"`), testSecret), wantUID: 5},
		{name: "nested repeat", tok: rawToken(hdr, claims(`,"ctx":{"a":1,"a":2},"l":[{"b":1,"b":1}]`), testSecret), wantUID: 5},
		{name: "40 distinct members", tok: rawToken(hdr, claims(many.String()), testSecret), wantUID: 5},
		{name: "blanks", tok: rawToken(hdr, " {\t\"sub\":\"5\" ,\"exp\": "+fmt.Sprint(future)+" , \"aud\":[ \"flashsale\" ]}\n", testSecret), wantUID: 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for range 2 { // the second call comes from a cache
				uid, err := v.Verify(testNow, c.tok)
				if err != c.want || uid != c.wantUID {
					t.Fatalf("Verify = %d, %v; want %d, %v", uid, err, c.wantUID, c.want)
				}
			}
		})
	}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func sigBytes(seg string) []byte {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		panic(err)
	}
	return b
}

func flipLast(b []byte) []byte {
	b = append([]byte(nil), b...)
	b[len(b)-1] ^= 1
	return b
}

func macOf(s string) []byte {
	m := hmac.New(sha256.New, testSecret)
	m.Write([]byte(s))
	return m.Sum(nil)
}

// nonCanonical changes the unused low bits of the last base64 character: a
// decoder that ignores them would read the same 32 bytes.
func nonCanonical(seg string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, seg[len(seg)-1])
	return seg[:len(seg)-1] + string(alphabet[i^1])
}

// TestHeaderKeptServesOnlyItsOwnBytes: the header kept from the last token
// read (Verifier.header) answers only a header byte for byte the same; a
// refused header is never kept, and tokens with other headers, read in
// between, get their own answers.
func TestHeaderKeptServesOnlyItsOwnBytes(t *testing.T) {
	k := getKeys(t)
	v := newVerifier(t, Config{HS256Secret: testSecret, JWKS: writeJWKS(t)})
	ec := sign(t, jwa.ES256, k.ec, "ec1", map[string]any{"sub": "7", "exp": testNow.Add(time.Hour).Unix()})
	for round := range 3 {
		for _, c := range []struct {
			name string
			tok  []byte
			uid  uint64
			want error
		}{
			{"HS256", handmade(t, hs(), std(fmt.Sprint(10+round)), testSecret), uint64(10 + round), nil},
			{"crit", handmade(t, with(hs(), "crit", []string{"exp"}), std("5"), testSecret), 0, ErrMalformed},
			{"alg none", handmade(t, map[string]any{"alg": "none"}, std("5"), testSecret), 0, ErrAlgorithm},
			{"ES256 by kid", ec, 7, nil},
			{"HS256 again", handmade(t, hs(), std(fmt.Sprint(20+round)), testSecret), uint64(20 + round), nil},
			{"HS256 header, ES256's kid", handmade(t, map[string]any{"alg": "HS256", "kid": "ec1"}, std("8"), testSecret), 8, nil},
		} {
			uid, err := v.Verify(testNow, c.tok)
			if !errors.Is(err, c.want) || uid != c.uid {
				t.Errorf("round %d, %s: %d %v, want %d %v", round, c.name, uid, err, c.uid, c.want)
			}
		}
	}
}
