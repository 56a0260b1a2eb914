package auth

import "errors"

// The errors Verify returns. They are preallocated so that refusing a token
// does not allocate; compare with == or errors.Is.
var (
	// ErrMissing: no token at all.
	ErrMissing = errors.New("auth: missing token")
	// ErrTooLong: the token is longer than Config.MaxTokenLen; it is not parsed.
	ErrTooLong = errors.New("auth: token too long")
	// ErrMalformed: not a compact JWS (three non-empty base64url segments), or
	// its header or claims are not the JSON they should be, including a
	// member name repeated or written in another case (see the package doc).
	ErrMalformed = errors.New("auth: malformed token")
	// ErrAlgorithm: the header names an algorithm that is not enabled
	// ("none", HS256 without a secret, RS256/ES256/EdDSA without a JWKS, any
	// other), or one that differs from the algorithm the key declares.
	ErrAlgorithm = errors.New("auth: algorithm not accepted")
	// ErrUnknownKey: a JWKS token without a kid, or whose kid is not in the
	// key set. Not cached, because a key rotation can make it valid.
	ErrUnknownKey = errors.New("auth: unknown key")
	// ErrKeyUnavailable: the JWK set could not be fetched. Transient; never
	// cached.
	ErrKeyUnavailable = errors.New("auth: key set unavailable")
	// ErrSignature: the signature does not verify.
	ErrSignature = errors.New("auth: bad signature")
	// ErrExpired: exp (plus the accepted skew) is in the past.
	ErrExpired = errors.New("auth: token expired")
	// ErrNotYetValid: nbf or iat (minus the accepted skew) is in the future.
	ErrNotYetValid = errors.New("auth: token not yet valid")
	// ErrClaims: exp or sub missing or invalid (sub must be a decimal integer
	// in 1..2^63-1 without sign or leading zeros).
	ErrClaims = errors.New("auth: invalid claims")
	// ErrIssuer: iss differs from Config.Issuer.
	ErrIssuer = errors.New("auth: wrong issuer")
	// ErrAudience: aud does not contain Config.Audience.
	ErrAudience = errors.New("auth: wrong audience")
)

// code numbers the sentinels so that a cache entry can hold one in a byte.
type code uint8

const (
	codeOK code = iota
	codeMissing
	codeTooLong
	codeMalformed
	codeAlgorithm
	codeUnknownKey
	codeKeyUnavailable
	codeSignature
	codeExpired
	codeNotYetValid
	codeClaims
	codeIssuer
	codeAudience
)

var codeErrs = [...]error{
	codeOK:             nil,
	codeMissing:        ErrMissing,
	codeTooLong:        ErrTooLong,
	codeMalformed:      ErrMalformed,
	codeAlgorithm:      ErrAlgorithm,
	codeUnknownKey:     ErrUnknownKey,
	codeKeyUnavailable: ErrKeyUnavailable,
	codeSignature:      ErrSignature,
	codeExpired:        ErrExpired,
	codeNotYetValid:    ErrNotYetValid,
	codeClaims:         ErrClaims,
	codeIssuer:         ErrIssuer,
	codeAudience:       ErrAudience,
}

func (c code) err() error { return codeErrs[c] }

// permanent reports whether a refusal with c holds for the same token bytes
// later too (modulo key rotation, which the negative cache's short TTL
// covers), so it may be remembered in the negative cache. Unknown keys and
// unavailable key sets may heal with the next JWKS refresh, and a token that
// is not yet valid becomes valid, so those are never cached.
func (c code) permanent() bool {
	switch c {
	case codeMalformed, codeAlgorithm, codeSignature, codeExpired, codeClaims, codeIssuer, codeAudience:
		return true
	}
	return false
}
