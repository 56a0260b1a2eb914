// Package tokens mints the bench's user tokens up front, before a run starts,
// so that signing costs nothing while requests fly.
//
// HS256 tokens are built by hand (base64url header and payload, then
// HMAC-SHA256) on every CPU at once: half a million take well under a second.
// ES256 and RS256 tokens are signed with jwx from a PEM private key; they cost
// far more per token (RS256 about a millisecond), so use HS256 for large crowds.
// Every token carries sub (the decimal user id), iat and exp, plus iss and aud
// when set, and kid in the header when set.
package tokens

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jwt"
)

// Set holds n tokens back to back in one buffer. It is read-only once
// minted and safe for concurrent use.
type Set struct {
	buf []byte
	off []uint32 // token i is buf[off[i]:off[i+1]]
}

// Len returns the number of tokens.
func (s *Set) Len() int { return len(s.off) - 1 }

// Token returns user index i's token; the bytes must not be modified.
func (s *Set) Token(i int) []byte { return s.buf[s.off[i]:s.off[i+1]] }

// Claims are what every token states.
type Claims struct {
	UserBase uint64    // user index i has sub = UserBase + i
	Users    int       // how many users
	Expires  time.Time // exp
	IssuedAt time.Time // iat
	Issuer   string    // iss, omitted when empty
	Audience string    // aud, omitted when empty
	KeyID    string    // kid header, omitted when empty
}

// MintHS256 signs c.Users tokens with secret.
func MintHS256(secret []byte, c Claims) (*Set, error) {
	if len(secret) == 0 {
		return nil, errors.New("tokens: empty HS256 secret")
	}
	hdr := `{"alg":"HS256","typ":"JWT"`
	if c.KeyID != "" {
		hdr += `,"kid":` + strconv.Quote(c.KeyID)
	}
	hdr += "}"
	prefix := base64.RawURLEncoding.AppendEncode(nil, []byte(hdr))
	prefix = append(prefix, '.')
	return mint(c, func(dst []byte, payload []byte, scratch *[]byte) []byte {
		start := len(dst)
		dst = append(dst, prefix...)
		dst = base64.RawURLEncoding.AppendEncode(dst, payload)
		m := hmac.New(sha256.New, secret)
		m.Write(dst[start:])
		*scratch = m.Sum((*scratch)[:0])
		dst = append(dst, '.')
		return base64.RawURLEncoding.AppendEncode(dst, *scratch)
	})
}

// MintKey signs c.Users tokens with the PEM private key in file, ES256 for an
// EC key and RS256 for an RSA key.
func MintKey(file string, c Claims) (*Set, error) {
	key, alg, err := signingKey(file, c.KeyID)
	if err != nil {
		return nil, err
	}
	if c.Users <= 0 {
		return nil, fmt.Errorf("tokens: %d users, want at least 1", c.Users)
	}
	var mu sync.Mutex
	var firstErr error
	toks := make([][]byte, c.Users)
	parallel(c.Users, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			signed, err := signJWT(key, alg, c, c.UserBase+uint64(i))
			if err != nil {
				mu.Lock()
				firstErr = cmpErr(firstErr, fmt.Errorf("tokens: signing user %d: %w", c.UserBase+uint64(i), err))
				mu.Unlock()
				return
			}
			toks[i] = signed
		}
	})
	if firstErr != nil {
		return nil, firstErr
	}
	return pack(toks), nil
}

// signingKey reads the PEM private key in file and returns it with the
// algorithm it signs with: ES256 for an EC key, RS256 for an RSA key, any
// other key refused. A non-empty kid is set on the key, so that jwt.Sign
// writes it into every token's header.
func signingKey(file, kid string) (jwk.Key, jwa.SignatureAlgorithm, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, "", fmt.Errorf("tokens: reading key: %w", err)
	}
	key, err := jwk.ParseKey(pem, jwk.WithPEM(true))
	if err != nil {
		return nil, "", fmt.Errorf("tokens: parsing key %s: %w", file, err)
	}
	var alg jwa.SignatureAlgorithm
	switch key.KeyType() {
	case jwa.EC:
		alg = jwa.ES256
	case jwa.RSA:
		alg = jwa.RS256
	default:
		return nil, "", fmt.Errorf("tokens: key %s is %s, want an EC (ES256) or RSA (RS256) private key", file, key.KeyType())
	}
	if kid != "" {
		if err := key.Set(jwk.KeyIDKey, kid); err != nil {
			return nil, "", fmt.Errorf("tokens: setting kid: %w", err)
		}
	}
	return key, alg, nil
}

// signJWT returns the token of user sub, stating c's claims, signed with key
// by jwx.
func signJWT(key jwk.Key, alg jwa.SignatureAlgorithm, c Claims, sub uint64) ([]byte, error) {
	b := jwt.NewBuilder().Subject(strconv.FormatUint(sub, 10)).
		IssuedAt(c.IssuedAt).Expiration(c.Expires)
	if c.Issuer != "" {
		b = b.Issuer(c.Issuer)
	}
	if c.Audience != "" {
		b = b.Audience([]string{c.Audience})
	}
	tok, err := b.Build()
	if err != nil {
		return nil, err
	}
	return jwt.Sign(tok, jwt.WithKey(alg, key))
}

// pack copies toks back to back into one Set, token i at index i.
func pack(toks [][]byte) *Set {
	set := &Set{off: make([]uint32, 0, len(toks)+1)}
	for _, t := range toks {
		set.off = append(set.off, uint32(len(set.buf)))
		set.buf = append(set.buf, t...)
	}
	set.off = append(set.off, uint32(len(set.buf)))
	return set
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// mint runs sign for every user in parallel chunks and concatenates the
// results. sign appends one token for payload to dst.
func mint(c Claims, sign func(dst, payload []byte, scratch *[]byte) []byte) (*Set, error) {
	if c.Users <= 0 {
		return nil, fmt.Errorf("tokens: %d users, want at least 1", c.Users)
	}
	type chunk struct {
		buf []byte
		off []uint32
	}
	workers := runtime.GOMAXPROCS(0)
	chunks := make([]chunk, workers)
	per := (c.Users + workers - 1) / workers
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*per, min((w+1)*per, c.Users)
		if lo >= hi {
			continue
		}
		wg.Go(func() {
			ch := chunk{buf: make([]byte, 0, (hi-lo)*180), off: make([]uint32, 0, hi-lo)}
			var payload, scratch []byte
			for i := lo; i < hi; i++ {
				payload = appendPayload(payload[:0], c, c.UserBase+uint64(i))
				ch.off = append(ch.off, uint32(len(ch.buf)))
				ch.buf = sign(ch.buf, payload, &scratch)
			}
			chunks[w] = ch
		})
	}
	wg.Wait()
	s := &Set{off: make([]uint32, 0, c.Users+1)}
	total := 0
	for _, ch := range chunks {
		total += len(ch.buf)
	}
	if total > 1<<32-1 {
		return nil, errors.New("tokens: more than 4 GiB of tokens")
	}
	s.buf = make([]byte, 0, total)
	for _, ch := range chunks {
		base := uint32(len(s.buf))
		for _, o := range ch.off {
			s.off = append(s.off, base+o)
		}
		s.buf = append(s.buf, ch.buf...)
	}
	s.off = append(s.off, uint32(len(s.buf)))
	return s, nil
}

func appendPayload(dst []byte, c Claims, sub uint64) []byte {
	dst = append(dst, `{"sub":"`...)
	dst = strconv.AppendUint(dst, sub, 10)
	dst = append(dst, `","iat":`...)
	dst = strconv.AppendInt(dst, c.IssuedAt.Unix(), 10)
	dst = append(dst, `,"exp":`...)
	dst = strconv.AppendInt(dst, c.Expires.Unix(), 10)
	if c.Issuer != "" {
		dst = append(dst, `,"iss":`...)
		dst = strconv.AppendQuote(dst, c.Issuer)
	}
	if c.Audience != "" {
		dst = append(dst, `,"aud":`...)
		dst = strconv.AppendQuote(dst, c.Audience)
	}
	return append(dst, '}')
}

// parallel calls f on GOMAXPROCS contiguous ranges of [0,n) at once.
func parallel(n int, f func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	per := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += per {
		hi := min(lo+per, n)
		wg.Go(func() { f(lo, hi) })
	}
	wg.Wait()
}
