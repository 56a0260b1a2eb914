// Package auth verifies the gateway's bearer tokens: compact JWS JWTs signed
// with HS256 (a shared secret) or with RS256, ES256 or EdDSA keys from a JWK
// set (a file, or a URL refreshed through jwk.Cache), using
// github.com/lestrrat-go/jwx/v2 for the cryptography.
//
// A purchase request carries the same token again and again, so Verify keeps
// a bounded cache of verified tokens: a hit costs a hash, a shard read lock
// and a string comparison, and no allocation. Cheap syntactic checks (length,
// exactly two dots, base64url alphabet) refuse garbage before any parsing,
// and a small negative cache makes a repeated bad token as cheap as a good
// one.
//
// # What is accepted
//
// The header alg picks the verification path and nothing else: HS256 is
// checked with Config.HS256Secret only, never with a JWKS key, so the classic
// HS/RS confusion (an HS256 token MACed with the RSA public key) fails; RS256,
// ES256 and EdDSA need a kid naming a JWKS key that declares that same alg.
// JWKS keys without alg, symmetric keys and keys for other algorithms are
// dropped when the set is loaded. "none" and every other algorithm are
// refused. A header or claims set that another JSON parser could read
// differently is malformed: a top-level member name that appears twice (once
// unescaped, so "s\u0075b" repeats "sub"), or one that matches a member we
// read only case-insensitively ("SUB", "ſub"), which encoding/json would
// still take for it (see ambiguous; RFC 7515 section 4, RFC 7519 section 4,
// RFC 8725). Claims: exp and sub are required; sub must be a decimal integer in
// 1..2^63-1 (it becomes a PostgreSQL bigint user id) with no sign or leading
// zeros; nbf and iat, when present, must not be in the future; iss and aud
// are checked when configured. Every time comparison allows Config.Skew
// (at most 30 s).
//
// # Caches
//
// The positive cache holds up to Config.CacheSize verified tokens (see entry
// for the bytes per entry: about 255 for a 190-byte token) until exp plus
// skew; an entry found past that answers ErrExpired and is dropped. The
// negative cache holds CacheSize/16 refused tokens for 30 s, and only
// refusals that cannot heal: unknown kids, an unavailable key set and tokens
// not yet valid are always checked again. Both are sharded maps keyed by a
// maphash of the token (seeded per Verifier, so hash flooding needs the
// seed) holding the full token, compared on every hit. Each shard has one
// RWMutex and no path holds two.
package auth

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash"
	"hash/maphash"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
)

// Defaults and limits for Config fields.
const (
	// DefaultJWKSRefresh is how often a JWK set URL is fetched again.
	DefaultJWKSRefresh = 5 * time.Minute
	// DefaultSkew is the accepted clock skew; it is also the maximum.
	DefaultSkew = 30 * time.Second
	// MaxSkew caps Config.Skew.
	MaxSkew = 30 * time.Second
	// DefaultMaxTokenLen is the longest token accepted, in bytes.
	DefaultMaxTokenLen = 4096
	// DefaultCacheSize bounds the verified-token cache, in entries.
	DefaultCacheSize = 1 << 20
	// negativeTTL is how long a refused token is remembered.
	negativeTTL = 30 * time.Second
	// unknownKidRefresh rate-limits JWKS refreshes triggered by unknown kids.
	unknownKidRefresh = 10 * time.Second
)

// Config configures a Verifier. At least one of HS256Secret and JWKS must be
// set.
type Config struct {
	// HS256Secret is the shared HS256 secret; empty disables HS256.
	HS256Secret []byte
	// JWKS is a file path or an http(s) URL of a JWK set with RS256, ES256 or
	// EdDSA public keys; empty disables those algorithms.
	JWKS string
	// JWKSRefresh is the refresh interval of a URL set; default
	// DefaultJWKSRefresh.
	JWKSRefresh time.Duration
	// Issuer and Audience are required in iss and aud when non-empty.
	Issuer, Audience string
	// Skew is the accepted clock skew: zero means DefaultSkew, negative means
	// none, anything above MaxSkew is capped.
	Skew time.Duration
	// MaxTokenLen is the longest token parsed, in bytes; default
	// DefaultMaxTokenLen.
	MaxTokenLen int
	// CacheSize bounds the verified-token cache, in entries; default
	// DefaultCacheSize. The negative cache holds CacheSize/16 (at least 64).
	CacheSize int
}

// Verifier verifies bearer tokens. It is safe for concurrent use. Close stops
// the JWKS refresher.
type Verifier struct {
	secret   []byte
	issuer   string
	audience string
	skew     int64
	maxLen   int
	seed     maphash.Seed
	pos, neg *tokenCache
	macs     sync.Pool // HMAC-SHA256 hashers keyed with secret
	lastHdr  atomic.Pointer[readHeader]

	// Exactly one of staticSet and cache is set when JWKS is configured.
	staticSet   jwk.Set
	cache       *jwk.Cache
	jwksURL     string
	lastKick    atomic.Int64
	ctx         context.Context
	cancel      context.CancelFunc
	jwksEnabled bool
}

// New returns a Verifier for cfg. A JWK set is loaded (or, for a URL,
// fetched) once before New returns, so a wrong path, an unreachable URL or a
// set without usable keys fails here; later refresh failures keep the last
// good set. The URL set is refreshed in the background until Close or until
// ctx is done.
func New(ctx context.Context, cfg Config) (*Verifier, error) {
	if len(cfg.HS256Secret) == 0 && cfg.JWKS == "" {
		return nil, fmt.Errorf("auth: neither an HS256 secret nor a JWKS configured")
	}
	cfg = cfg.withDefaults()
	v := &Verifier{
		secret:   bytes.Clone(cfg.HS256Secret),
		issuer:   cfg.Issuer,
		audience: cfg.Audience,
		skew:     int64(cfg.Skew),
		maxLen:   cfg.MaxTokenLen,
		seed:     maphash.MakeSeed(),
		pos:      newTokenCache(cfg.CacheSize),
		neg:      newTokenCache(max(64, cfg.CacheSize/16)),
	}
	v.macs.New = func() any { return hmac.New(sha256.New, v.secret) }
	v.ctx, v.cancel = context.WithCancel(ctx)
	if cfg.JWKS == "" {
		return v, nil
	}
	v.jwksEnabled = true
	var err error
	if strings.HasPrefix(cfg.JWKS, "http://") || strings.HasPrefix(cfg.JWKS, "https://") {
		err = v.fetchJWKS(ctx, cfg.JWKS, cfg.JWKSRefresh)
	} else {
		err = v.readJWKS(cfg.JWKS)
	}
	if err != nil {
		v.cancel()
		return nil, err
	}
	return v, nil
}

// withDefaults returns c with every unset field at its default and Skew
// brought into 0..MaxSkew, as the Config docs describe.
func (c Config) withDefaults() Config {
	if c.JWKSRefresh <= 0 {
		c.JWKSRefresh = DefaultJWKSRefresh
	}
	switch {
	case c.Skew == 0:
		c.Skew = DefaultSkew
	case c.Skew < 0:
		c.Skew = 0
	case c.Skew > MaxSkew:
		c.Skew = MaxSkew
	}
	if c.MaxTokenLen <= 0 {
		c.MaxTokenLen = DefaultMaxTokenLen
	}
	if c.CacheSize <= 0 {
		c.CacheSize = DefaultCacheSize
	}
	return c
}

// fetchJWKS registers the JWK set at url with a jwk.Cache that refreshes it
// every refresh until v.ctx is done, keeping only usableKeys, and fetches it
// once now (bounded by ctx), so that an unreachable URL or a set without
// usable keys fails New rather than the first request.
func (v *Verifier) fetchJWKS(ctx context.Context, url string, refresh time.Duration) error {
	v.jwksURL = url
	v.cache = jwk.NewCache(v.ctx)
	err := v.cache.Register(url,
		jwk.WithRefreshInterval(refresh),
		jwk.WithHTTPClient(&http.Client{Timeout: 10 * time.Second}),
		jwk.WithPostFetcher(jwk.PostFetchFunc(func(_ string, s jwk.Set) (jwk.Set, error) {
			return usableKeys(s)
		})))
	if err != nil {
		return fmt.Errorf("auth: registering jwks url: %w", err)
	}
	if _, err := v.cache.Refresh(ctx, url); err != nil {
		return fmt.Errorf("auth: fetching jwks %s: %w", url, err)
	}
	return nil
}

// readJWKS loads the usable keys of the JWK set in file once: a file set is
// never refreshed.
func (v *Verifier) readJWKS(file string) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("auth: reading jwks: %w", err)
	}
	set, err := jwk.Parse(raw)
	if err != nil {
		return fmt.Errorf("auth: parsing jwks %s: %w", file, err)
	}
	if v.staticSet, err = usableKeys(set); err != nil {
		return fmt.Errorf("auth: jwks %s: %w", file, err)
	}
	return nil
}

// Close stops the background JWKS refresh. Verify keeps working with the
// last fetched set.
func (v *Verifier) Close() { v.cancel() }

// usableKeys returns the public signature keys of set that declare a kid and
// one of the accepted asymmetric algorithms matching their key type.
func usableKeys(set jwk.Set) (jwk.Set, error) {
	out := jwk.NewSet()
	for i := range set.Len() {
		k, _ := set.Key(i)
		if k.KeyID() == "" {
			continue
		}
		if u := k.KeyUsage(); u != "" && u != jwk.ForSignature.String() {
			continue
		}
		var ok bool
		switch k.Algorithm().String() {
		case jwa.RS256.String():
			ok = k.KeyType() == jwa.RSA
		case jwa.ES256.String():
			ec, isEC := k.(jwk.ECDSAPublicKey)
			if !isEC {
				if priv, isPriv := k.(jwk.ECDSAPrivateKey); isPriv {
					ok = priv.Crv() == jwa.P256
				}
			} else {
				ok = ec.Crv() == jwa.P256
			}
		case jwa.EdDSA.String():
			if k.KeyType() == jwa.OKP {
				if okp, isOKP := k.(jwk.OKPPublicKey); isOKP {
					ok = okp.Crv() == jwa.Ed25519
				} else if okp, isOKP := k.(jwk.OKPPrivateKey); isOKP {
					ok = okp.Crv() == jwa.Ed25519
				}
			}
		}
		if !ok {
			continue
		}
		pub, err := k.PublicKey()
		if err != nil {
			continue
		}
		if err := out.AddKey(pub); err != nil {
			continue
		}
	}
	if out.Len() == 0 {
		return nil, fmt.Errorf("no usable keys (need kid and alg RS256, ES256 or EdDSA)")
	}
	return out, nil
}

// Verify returns the user id in token's sub claim, or one of the package's
// sentinel errors. token is the raw compact JWS (what Bearer returns); Verify
// does not keep it. A token verified before and not expired at now is
// answered from the cache without a signature check and without allocating;
// so are tokens refused by the syntactic checks and, for 30 s, tokens
// refused for a permanent reason.
func (v *Verifier) Verify(now time.Time, token []byte) (userID uint64, err error) {
	switch {
	case len(token) == 0:
		return 0, ErrMissing
	case len(token) > v.maxLen:
		return 0, ErrTooLong
	}
	h := maphash.Bytes(v.seed, token)
	t := now.UnixNano()
	// A hit compares equal to a token that passed every check, so the
	// syntactic check can wait until after the lookup.
	if uid, hit, stale := v.pos.get(h, token, t); hit {
		return uid, nil
	} else if stale {
		return 0, ErrExpired
	}
	if !wellFormed(token) {
		return 0, ErrMalformed
	}
	if c, hit, _ := v.neg.get(h, token, t); hit {
		return 0, code(c).err()
	}
	uid, until, c := v.verify(t, token)
	if c != codeOK {
		if c.permanent() {
			v.neg.put(h, string(token), uint64(c), t+int64(negativeTTL), t)
		}
		return 0, c.err()
	}
	v.pos.put(h, string(token), uid, until, t)
	return uid, nil
}

// jwsChar is 1 for the bytes of a compact JWS: the base64url alphabet and '.'.
var jwsChar = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
			t[c] = 1
		}
	}
	return t
}()

// wellFormed reports whether token is three non-empty unpadded base64url
// segments. It runs on every request, so the alphabet check is a branch-free
// table walk and the dots are found with the vectorised IndexByte.
func wellFormed(token []byte) bool {
	i := bytes.IndexByte(token, '.')
	if i <= 0 {
		return false
	}
	j := bytes.IndexByte(token[i+1:], '.')
	if j <= 0 {
		return false
	}
	j += i + 1
	last := len(token) - j - 1
	if last == 0 || bytes.IndexByte(token[j+1:], '.') >= 0 {
		return false
	}
	// A segment of 4k+1 characters is not valid unpadded base64.
	if i%4 == 1 || (j-i-1)%4 == 1 || last%4 == 1 {
		return false
	}
	ok := uint8(1)
	for len(token) >= 8 {
		ok &= jwsChar[token[0]] & jwsChar[token[1]] & jwsChar[token[2]] & jwsChar[token[3]] &
			jwsChar[token[4]] & jwsChar[token[5]] & jwsChar[token[6]] & jwsChar[token[7]]
		token = token[8:]
	}
	for _, c := range token {
		ok &= jwsChar[c]
	}
	return ok == 1
}

type header struct {
	Alg  *string         `json:"alg"`
	Kid  string          `json:"kid"`
	Crit json.RawMessage `json:"crit"`
	B64  json.RawMessage `json:"b64"`
}

type claims struct {
	Sub *string         `json:"sub"`
	Exp *float64        `json:"exp"`
	Nbf *float64        `json:"nbf"`
	Iat *float64        `json:"iat"`
	Iss *string         `json:"iss"`
	Aud json.RawMessage `json:"aud"`
}

// verify does the full check of a well-formed token at now (Unix ns). It
// returns the user id and the last instant (Unix ns) at which the token
// stays valid.
func (v *Verifier) verify(now int64, token []byte) (uid uint64, until int64, c code) {
	i := bytes.IndexByte(token, '.')
	hdr := v.header(token[:i])
	if hdr == nil {
		return 0, 0, codeMalformed
	}
	var payload []byte
	var err error
	switch alg := hdr.alg; alg {
	case jwa.HS256.String():
		if len(v.secret) == 0 {
			return 0, 0, codeAlgorithm
		}
		if payload = v.verifyHS256(token, i); payload == nil {
			return 0, 0, codeSignature
		}
	case jwa.RS256.String(), jwa.ES256.String(), jwa.EdDSA.String():
		if !v.jwksEnabled {
			return 0, 0, codeAlgorithm
		}
		if hdr.kid == "" {
			return 0, 0, codeUnknownKey
		}
		set := v.staticSet
		if v.cache != nil {
			if set, err = v.cache.Get(v.ctx, v.jwksURL); err != nil {
				return 0, 0, codeKeyUnavailable
			}
		}
		key, ok := set.LookupKeyID(hdr.kid)
		if !ok {
			v.kickRefresh(now)
			return 0, 0, codeUnknownKey
		}
		if key.Algorithm().String() != alg {
			return 0, 0, codeAlgorithm
		}
		payload, err = jws.Verify(token, jws.WithKeySet(set,
			jws.WithRequireKid(true), jws.WithUseDefault(false), jws.WithInferAlgorithmFromKey(false)))
		if err != nil {
			return 0, 0, codeSignature
		}
	default:
		return 0, 0, codeAlgorithm
	}
	return v.checkClaims(now, payload)
}

// readHeader is a JOSE header that verify may act on: its base64url
// segment as it came, and what verify reads of it.
type readHeader struct {
	seg, alg, kid string
}

// header reads a token's header segment, or returns nil for one that is not
// base64url JSON with a single "alg" and no JWS extension (RFC 7515 4.1.11:
// none is supported, so a "crit" or "b64" is refused). A header read once is
// kept: the tokens of one issuer and key share their header byte for byte,
// so at a sale's start, when nearly every token is new, the header of each
// costs a comparison instead of a decode, a JSON parse and a duplicate scan
// (BenchmarkVerifyHS256Full). The one kept is the last that was read.
func (v *Verifier) header(seg []byte) *readHeader {
	if h := v.lastHdr.Load(); h != nil && h.seg == string(seg) {
		return h
	}
	var hdr header
	raw := make([]byte, base64.RawURLEncoding.DecodedLen(len(seg)))
	n, err := base64.RawURLEncoding.Decode(raw, seg)
	if err != nil || json.Unmarshal(raw[:n], &hdr) != nil || hdr.Alg == nil || ambiguous(raw[:n], headerFields) ||
		hdr.Crit != nil || hdr.B64 != nil {
		return nil
	}
	h := &readHeader{seg: string(seg), alg: *hdr.Alg, kid: hdr.Kid}
	v.lastHdr.Store(h)
	return h
}

var strictB64 = base64.RawURLEncoding.Strict()

// verifyHS256 checks the HMAC-SHA256 signature of a well-formed token whose
// header (token[:i]) was read and found to name HS256 with no extension, and returns its
// decoded payload, or nil when the signature does not match. It is what
// jws.Verify does for one HS256 key (RFC 7515 5.2: the MAC of the first two
// segments, compared in constant time), without parsing the header a second
// time: at a sale's start nearly every request carries a new token, and
// jws.Verify was the costliest step of the purchase path after the system
// calls (BenchmarkVerifyHS256Full).
func (v *Verifier) verifyHS256(token []byte, i int) []byte {
	j := bytes.LastIndexByte(token, '.')
	var sig [sha256.Size]byte
	if base64.RawURLEncoding.DecodedLen(len(token)-j-1) != sha256.Size {
		return nil
	}
	// Strict: a signature whose last character carries nonzero unused bits
	// is another spelling of the same MAC, refused (one token, one string).
	if n, err := strictB64.Decode(sig[:], token[j+1:]); err != nil || n != sha256.Size {
		return nil
	}
	m := v.macs.Get().(hash.Hash)
	m.Reset()
	m.Write(token[:j])
	var sum [sha256.Size]byte
	ok := hmac.Equal(m.Sum(sum[:0]), sig[:])
	v.macs.Put(m)
	if !ok {
		return nil
	}
	payload := make([]byte, base64.RawURLEncoding.DecodedLen(j-i-1))
	n, err := base64.RawURLEncoding.Decode(payload, token[i+1:j])
	if err != nil {
		return nil
	}
	return payload[:n]
}

// kickRefresh refetches a URL key set in the background after an unknown
// kid, at most once per unknownKidRefresh, so that a rotated-in key is picked
// up before the next scheduled refresh.
func (v *Verifier) kickRefresh(now int64) {
	if v.cache == nil {
		return
	}
	last := v.lastKick.Load()
	if now-last < int64(unknownKidRefresh) || !v.lastKick.CompareAndSwap(last, now) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(v.ctx, 10*time.Second)
		defer cancel()
		_, _ = v.cache.Refresh(ctx, v.jwksURL)
	}()
}

// checkClaims checks the verified payload's claims at now (Unix ns): the
// package doc's rules, each refusal its own code (the 401 matrix of
// TestVerifyAttackMatrix).
//
// Why by hand rather than jwx's validation options (jwt.Parse with
// WithValidate, WithAcceptableSkew, WithIssuer, WithAudience,
// WithRequiredClaim)? Every new token is a cache miss, and at a sale's start
// nearly every request carries one. BenchmarkClaims sets the two side by
// side: by hand about 7-10 us, 904 B and 24 allocations a claims set; jwx
// 50-100 us, 10.8 kB and 152 allocations (2 cores under load, 2026-12-01),
// and jwx still needs the sub and duplicate-name checks on top. Neither is
// allocation-free (the JSON decode allocates).
func (v *Verifier) checkClaims(now int64, payload []byte) (uid uint64, until int64, c code) {
	var cl claims
	if json.Unmarshal(payload, &cl) != nil || ambiguous(payload, claimFields) {
		return 0, 0, codeMalformed
	}
	if cl.Exp == nil || cl.Sub == nil {
		return 0, 0, codeClaims
	}
	uid, ok := parseSub(*cl.Sub)
	if !ok {
		return 0, 0, codeClaims
	}
	until = satAdd(unixNanos(*cl.Exp), v.skew)
	if now > until {
		return 0, 0, codeExpired
	}
	if cl.Nbf != nil && now < unixNanos(*cl.Nbf)-v.skew {
		return 0, 0, codeNotYetValid
	}
	if cl.Iat != nil && now < unixNanos(*cl.Iat)-v.skew {
		return 0, 0, codeNotYetValid
	}
	if v.issuer != "" && (cl.Iss == nil || *cl.Iss != v.issuer) {
		return 0, 0, codeIssuer
	}
	if v.audience != "" {
		if c := v.checkAudience(cl.Aud); c != codeOK {
			return 0, 0, c
		}
	}
	return uid, until, codeOK
}

func (v *Verifier) checkAudience(raw json.RawMessage) code {
	if raw == nil {
		return codeAudience
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == v.audience {
			return codeOK
		}
		return codeAudience
	}
	var many []string
	if json.Unmarshal(raw, &many) != nil {
		return codeMalformed
	}
	for _, a := range many {
		if a == v.audience {
			return codeOK
		}
	}
	return codeAudience
}

// parseSub accepts the canonical decimal form of an integer in 1..2^63-1.
func parseSub(s string) (uint64, bool) {
	if s == "" || s[0] == '0' || len(s) > 19 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 63)
	return n, err == nil
}

// unixNanos converts a NumericDate (seconds, possibly fractional) to Unix
// nanoseconds, saturating.
func unixNanos(sec float64) int64 {
	switch {
	case math.IsNaN(sec):
		return math.MinInt64
	case sec >= math.MaxInt64/1e9:
		return math.MaxInt64
	case sec <= math.MinInt64/1e9:
		return math.MinInt64
	}
	return int64(sec * 1e9)
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Bearer returns the token of an Authorization header value of the form
// "Bearer <token>" (scheme case-insensitive, surrounding blanks ignored).
// ok is false for another scheme or an empty token. The token aliases header;
// Bearer does not allocate.
func Bearer(header []byte) (token []byte, ok bool) {
	header = trimBlank(header)
	const scheme = "bearer"
	if len(header) <= len(scheme) || (header[len(scheme)] != ' ' && header[len(scheme)] != '\t') {
		return nil, false
	}
	for i := 0; i < len(scheme); i++ {
		if header[i]|0x20 != scheme[i] {
			return nil, false
		}
	}
	token = trimBlank(header[len(scheme)+1:])
	return token, len(token) > 0
}

func trimBlank(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}
