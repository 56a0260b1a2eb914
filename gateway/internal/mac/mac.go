// Package mac signs and checks the gateway's small self-contained tokens
// (queue passes, proof-of-work challenges) with HMAC-SHA256, allocating
// nothing: the tokens are short, so the two hashes of an HMAC run on stack
// buffers with sha256.Sum256 instead of a hash.Hash from the heap.
//
// A Ring holds the current key and, during a rotation, the previous one:
// Sign uses the current key, Check accepts either, so tokens issued just
// before a rotation stay valid until they expire.
package mac

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
)

// Size is the length of a tag in bytes: HMAC-SHA256 truncated to 128 bits
// (RFC 2104 section 5 allows truncation to half the output).
const Size = 16

// MaxMessage is the longest message Sign and Check take.
const MaxMessage = 64

const block = 64

// Key is one HMAC key with its pads precomputed.
type Key struct {
	ipad, opad [block]byte
}

// NewKey returns the key for secret (at least 16 bytes; a longer secret than
// a block is hashed first, as RFC 2104 says).
func NewKey(secret []byte) (*Key, error) {
	if len(secret) < 16 {
		return nil, errors.New("mac: secret shorter than 16 bytes")
	}
	var k [block]byte
	if len(secret) > block {
		s := sha256.Sum256(secret)
		copy(k[:], s[:])
	} else {
		copy(k[:], secret)
	}
	key := &Key{}
	for i := range k {
		key.ipad[i] = k[i] ^ 0x36
		key.opad[i] = k[i] ^ 0x5c
	}
	return key, nil
}

// sum writes HMAC(msg) truncated to Size into tag. msg is at most MaxMessage bytes.
func (k *Key) sum(tag *[Size]byte, msg []byte) {
	var in [block + MaxMessage]byte
	copy(in[:], k.ipad[:])
	n := copy(in[block:], msg)
	inner := sha256.Sum256(in[:block+n])
	var out [block + sha256.Size]byte
	copy(out[:], k.opad[:])
	copy(out[block:], inner[:])
	full := sha256.Sum256(out[:])
	copy(tag[:], full[:Size])
}

// Ring is the current key and optionally the previous one. It is immutable
// and safe for concurrent use.
type Ring struct {
	cur, prev *Key
}

// NewRing returns a ring signing with cur and also accepting prev (nil
// outside a rotation).
func NewRing(cur, prev []byte) (*Ring, error) {
	c, err := NewKey(cur)
	if err != nil {
		return nil, err
	}
	r := &Ring{cur: c}
	if prev != nil {
		if r.prev, err = NewKey(prev); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Append appends the tag of msg (at most MaxMessage bytes) under the current key.
func (r *Ring) Append(dst, msg []byte) []byte {
	if len(msg) > MaxMessage {
		panic("mac: message longer than MaxMessage")
	}
	var tag [Size]byte
	r.cur.sum(&tag, msg)
	return append(dst, tag[:]...)
}

// Check reports whether tag is msg's tag under the current or the previous
// key, in constant time for each key.
func (r *Ring) Check(msg, tag []byte) bool {
	if len(tag) != Size || len(msg) > MaxMessage {
		return false
	}
	var want [Size]byte
	r.cur.sum(&want, msg)
	if subtle.ConstantTimeCompare(want[:], tag) == 1 {
		return true
	}
	if r.prev == nil {
		return false
	}
	r.prev.sum(&want, msg)
	return subtle.ConstantTimeCompare(want[:], tag) == 1
}
