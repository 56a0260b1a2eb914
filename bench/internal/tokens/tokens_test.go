package tokens

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwt"
)

func TestHS256VerifiesWithJWX(t *testing.T) {
	secret := []byte("test-secret")
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	s, err := MintHS256(secret, Claims{UserBase: 1000, Users: 1001, Expires: exp, IssuedAt: time.Now(), Issuer: "bench", Audience: "gw", KeyID: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 1001 {
		t.Fatalf("len = %d", s.Len())
	}
	for _, i := range []int{0, 500, 1000} {
		tok, err := jwt.Parse(s.Token(i), jwt.WithKey(jwa.HS256, secret), jwt.WithIssuer("bench"), jwt.WithAudience("gw"))
		if err != nil {
			t.Fatalf("token %d: %v", i, err)
		}
		if tok.Subject() != strconv.Itoa(1000+i) || !tok.Expiration().Equal(exp) {
			t.Fatalf("token %d: sub %q exp %v", i, tok.Subject(), tok.Expiration())
		}
	}
	if _, err := jwt.Parse(s.Token(3), jwt.WithKey(jwa.HS256, []byte("other"))); err == nil {
		t.Fatal("token verified with the wrong secret")
	}
}

func TestES256KeyFile(t *testing.T) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := MintKey(file, Claims{UserBase: 1, Users: 10, Expires: time.Now().Add(time.Hour), IssuedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Parse(s.Token(9), jwt.WithKey(jwa.ES256, &k.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	if tok.Subject() != "10" {
		t.Fatalf("sub = %q", tok.Subject())
	}
}
