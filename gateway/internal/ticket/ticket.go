// Package ticket issues and verifies purchase tickets: compact, HMAC-signed,
// time-boxed tokens bound to one (user, sale), handed out by the ticket
// endpoint once the sale has started and sent back on purchase in
// X-Purchase-Ticket.
//
// A ticket is 60 characters of unpadded base64url over 45 bytes:
//
//	version (1) | sale id (4, big endian) | user id (8) | issued at (8, unix ms) |
//	expires at (8, unix ms) | HMAC-SHA-256 of the 29 bytes before it, first 16 bytes
//
// Nothing in it is secret; it only proves that a gateway holding the key
// issued it to this user for this sale at that time. Verify allocates nothing:
// the HMAC is computed with sha256.Sum256 over stack buffers (the pads are
// precomputed per key), and the comparison is constant time.
//
// Rotation: Keys holds the current key, which signs, and optionally the
// previous one, which still verifies, so tickets issued just before a
// rotation stay valid until they expire (at most one lifetime, default 60 s).
// Every gateway of a sale must share the keys.
package ticket

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"time"
)

// DefaultLifetime is how long a ticket is valid when Keys names none.
const DefaultLifetime = 60 * time.Second

// MinKeyLen is the shortest key accepted, in bytes.
const MinKeyLen = 16

const (
	version  = 1
	bodyLen  = 1 + 4 + 8 + 8 + 8
	macLen   = 16
	rawLen   = bodyLen + macLen
	textLen  = (rawLen*8 + 5) / 6 // unpadded base64: 60
	blockLen = 64                 // SHA-256 block size
)

// TextLen is the length of every ticket's text.
const TextLen = textLen

// Verification failures. They are values, so returning one allocates nothing.
var (
	ErrMalformed = errors.New("ticket: malformed")
	ErrSignature = errors.New("ticket: bad signature")
	ErrExpired   = errors.New("ticket: expired")
	ErrOtherUser = errors.New("ticket: issued to another user")
	ErrOtherSale = errors.New("ticket: issued for another sale")
	ErrTooEarly  = errors.New("ticket: issued before the sale started")
)

// key is one HMAC key as its two padded blocks.
type key struct{ ipad, opad [blockLen]byte }

func newKey(secret []byte) key {
	var k key
	if len(secret) > blockLen {
		sum := sha256.Sum256(secret)
		secret = sum[:]
	}
	copy(k.ipad[:], secret)
	copy(k.opad[:], secret)
	for i := range k.ipad {
		k.ipad[i] ^= 0x36
		k.opad[i] ^= 0x5c
	}
	return k
}

// mac returns the first macLen bytes of HMAC-SHA-256(k, body).
func (k *key) mac(body *[bodyLen]byte) [macLen]byte {
	var in [blockLen + bodyLen]byte
	copy(in[:], k.ipad[:])
	copy(in[blockLen:], body[:])
	inner := sha256.Sum256(in[:])
	var out [blockLen + sha256.Size]byte
	copy(out[:], k.opad[:])
	copy(out[blockLen:], inner[:])
	sum := sha256.Sum256(out[:])
	var m [macLen]byte
	copy(m[:], sum[:macLen])
	return m
}

// Keys signs and verifies tickets. It is immutable and safe for concurrent
// use.
type Keys struct {
	keys     []key // [0] signs; all verify
	lifetime time.Duration
}

// New returns Keys that sign with current and also accept previous (nil or
// empty: no rotation in progress). lifetime <= 0 means DefaultLifetime.
func New(current, previous []byte, lifetime time.Duration) (*Keys, error) {
	if len(current) < MinKeyLen || (len(previous) > 0 && len(previous) < MinKeyLen) {
		return nil, errors.New("ticket: a key is shorter than 16 bytes")
	}
	if lifetime <= 0 {
		lifetime = DefaultLifetime
	}
	k := &Keys{keys: []key{newKey(current)}, lifetime: lifetime}
	if len(previous) > 0 {
		k.keys = append(k.keys, newKey(previous))
	}
	return k, nil
}

// Lifetime returns how long an issued ticket is valid.
func (k *Keys) Lifetime() time.Duration { return k.lifetime }

// Append appends a ticket for (user, sale) issued at now to dst, and returns
// it with the ticket's expiry.
func (k *Keys) Append(dst []byte, user uint64, sale int64, now time.Time) ([]byte, time.Time) {
	exp := now.Add(k.lifetime)
	var raw [rawLen]byte
	body := (*[bodyLen]byte)(raw[:bodyLen])
	body[0] = version
	binary.BigEndian.PutUint32(body[1:], uint32(sale))
	binary.BigEndian.PutUint64(body[5:], user)
	binary.BigEndian.PutUint64(body[13:], uint64(now.UnixMilli()))
	binary.BigEndian.PutUint64(body[21:], uint64(exp.UnixMilli()))
	m := k.keys[0].mac(body)
	copy(raw[bodyLen:], m[:])
	return base64.RawURLEncoding.AppendEncode(dst, raw[:]), exp.Truncate(time.Millisecond)
}

// Verify checks that tok is a ticket signed by one of the keys, for user
// and sale, issued at or after the sale's start (unix ns) and not expired at
// now. It allocates nothing.
func (k *Keys) Verify(tok []byte, user uint64, sale int64, start int64, now time.Time) error {
	if len(tok) != textLen {
		return ErrMalformed
	}
	var raw [rawLen + 2]byte // Decode may write up to a whole quantum
	n, err := base64.RawURLEncoding.Decode(raw[:], tok)
	if err != nil || n != rawLen || raw[0] != version {
		return ErrMalformed
	}
	body := (*[bodyLen]byte)(raw[:bodyLen])
	ok := 0
	for i := range k.keys {
		m := k.keys[i].mac(body)
		ok |= subtle.ConstantTimeCompare(m[:], raw[bodyLen:rawLen])
	}
	if ok != 1 {
		return ErrSignature
	}
	issued := int64(binary.BigEndian.Uint64(body[13:]))
	exp := int64(binary.BigEndian.Uint64(body[21:]))
	switch {
	case binary.BigEndian.Uint64(body[5:]) != user:
		return ErrOtherUser
	case int64(binary.BigEndian.Uint32(body[1:])) != sale:
		return ErrOtherSale
	case issued < start/int64(time.Millisecond):
		return ErrTooEarly
	case now.UnixMilli() >= exp:
		return ErrExpired
	}
	return nil
}

// Random returns Keys with a fresh random key and the default lifetime: the
// tickets are valid only where these Keys are, for a single gateway or a
// test.
func Random() *Keys {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	k, _ := New(b[:], nil, 0)
	return k
}
