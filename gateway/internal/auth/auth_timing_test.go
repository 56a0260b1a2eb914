package auth

import (
	"strconv"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwt"
)

func BenchmarkVerifyCacheHit(b *testing.B) {
	v := newVerifier(b, Config{HS256Secret: testSecret})
	tok := []byte(mint(b, 123456789))
	if _, err := v.Verify(testNow, tok); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(testNow, tok); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyCacheHitParallel(b *testing.B) {
	v := newVerifier(b, Config{HS256Secret: testSecret})
	toks := make([][]byte, 1024)
	for i := range toks {
		toks[i] = []byte(mint(b, uint64(i+1)))
		if _, err := v.Verify(testNow, toks[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := v.Verify(testNow, toks[i&1023]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

func BenchmarkVerifyGarbage(b *testing.B) {
	v := newVerifier(b, Config{HS256Secret: testSecret})
	tok := []byte("eyJhbGciOi.not a token")
	b.ReportAllocs()
	for b.Loop() {
		_, _ = v.Verify(testNow, tok)
	}
}

// BenchmarkVerifyHS256Full measures a cache miss: header and claims parsing
// plus the HMAC, without the cache.
func BenchmarkVerifyHS256Full(b *testing.B) {
	v := newVerifier(b, Config{HS256Secret: testSecret})
	tok := []byte(mint(b, 123456789))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, c := v.verify(testNow.UnixNano(), tok); c != codeOK {
			b.Fatal(c.err())
		}
	}
}

// BenchmarkVerifyES256Full measures a cache miss for an ES256 token from a
// JWKS file.
func BenchmarkVerifyES256Full(b *testing.B) {
	v := newVerifier(b, Config{JWKS: writeJWKS(b)})
	tok := sign(b, jwa.ES256, getKeys(b).ec, "ec1", map[string]any{"sub": "123456789", "exp": testNow.Add(time.Hour).Unix()})
	b.ReportAllocs()
	for b.Loop() {
		if _, _, c := v.verify(testNow.UnixNano(), tok); c != codeOK {
			b.Fatal(c.err())
		}
	}
}

// BenchmarkAmbiguous measures the duplicate-name scan verify and checkClaims
// add to a cache miss, on a typical header and claims set.
func BenchmarkAmbiguous(b *testing.B) {
	for _, c := range []struct{ name, in string }{
		{"header", `{"alg":"HS256","typ":"JWT","kid":"k1"}`},
		{"claims", `{"iss":"https://idp.example","sub":"123456789","aud":["flashsale","other"],"exp":1900003600,"iat":1900000000,"jti":"3f2a9c1e-6d7b-4f1a-9c2e-8b7d6a5f4e3d","scope":"buy read"}`},
	} {
		in := []byte(c.in)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if ambiguous(in, claimFields) {
					b.Fatal("ambiguous")
				}
			}
		})
	}
}

// BenchmarkClaims sets checkClaims beside the same checks done by jwx's
// validation options (jwt.Parse of the verified payload with exp and sub
// required, skew, iss and aud; the sub and duplicate-name checks are still
// needed on top), on a cache miss's claims set. It is why checkClaims stays
// hand-written: see its doc.
func BenchmarkClaims(b *testing.B) {
	v := newVerifier(b, Config{HS256Secret: testSecret, Issuer: "https://idp.example", Audience: "flashsale"})
	payload := []byte(`{"iss":"https://idp.example","sub":"123456789","aud":["flashsale","other"],"exp":` +
		strconv.FormatInt(testNow.Add(time.Hour).Unix(), 10) + `,"iat":` + strconv.FormatInt(testNow.Unix(), 10) + `}`)
	now := testNow.UnixNano()
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, c := v.checkClaims(now, payload); c != codeOK {
				b.Fatal(c.err())
			}
		}
	})
	clock := jwt.ClockFunc(func() time.Time { return testNow })
	b.Run("jwx", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tok, err := jwt.Parse(payload, jwt.WithVerify(false), jwt.WithValidate(true), jwt.WithClock(clock),
				jwt.WithAcceptableSkew(time.Duration(v.skew)), jwt.WithIssuer(v.issuer), jwt.WithAudience(v.audience),
				jwt.WithRequiredClaim(jwt.ExpirationKey), jwt.WithRequiredClaim(jwt.SubjectKey))
			if err != nil || ambiguous(payload, claimFields) {
				b.Fatal(err)
			}
			if _, ok := parseSub(tok.Subject()); !ok {
				b.Fatal("sub")
			}
		}
	})
}
