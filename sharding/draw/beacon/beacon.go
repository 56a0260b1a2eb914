// Package beacon pins drand's quicknet chain, the public randomness beacon
// of issue 59's draw, and checks its rounds offline: a round's signature is
// verified against the pinned public key before its randomness is used, so a
// relay (or anyone between it and us) can delay a round but never forge one.
//
// quicknet ("bls-unchained-g1-rfc9380", run by the League of Entropy): a
// round every 3 s from its genesis; round r's message is SHA-256 of r as 8
// bytes big-endian; its signature is a BLS12-381 signature on G1 (48 bytes,
// compressed) under the chain's key on G2 (96 bytes), hashed to the curve
// with RFC 9380's BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_; its
// randomness is SHA-256 of the signature. Unchained: a round does not depend
// on the one before, so one round is checked alone.
//
// Verifying is one pairing check, done by github.com/cloudflare/circl's
// sign/bls (reviewed, no cgo); drand's own client would pull in libp2p.
package beacon

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/cloudflare/circl/sign/bls"
)

// quicknet, as https://api.drand.sh/v2/chains/<ChainHash>/info serves it.
const (
	ChainHash    = "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971"
	PublicKeyHex = "83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a"
	Scheme       = "bls-unchained-g1-rfc9380"
	GenesisUnix  = 1692803367
	Period       = 3 * time.Second
)

// SignatureSize is a round signature's length: a compressed G1 point.
const SignatureSize = 48

var publicKey = func() *bls.PublicKey[bls.KeyG2SigG1] {
	b, err := hex.DecodeString(PublicKeyHex)
	if err != nil {
		panic(err)
	}
	k := new(bls.PublicKey[bls.KeyG2SigG1])
	if err := k.UnmarshalBinary(b); err != nil {
		panic(fmt.Sprintf("beacon: the pinned quicknet key: %v", err))
	}
	return k
}()

// ErrSignature means a round's signature is not quicknet's for that round.
var ErrSignature = errors.New("beacon: the signature is not quicknet's for this round")

// Message is what quicknet signs for round r.
func Message(r uint64) [sha256.Size]byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], r)
	return sha256.Sum256(b[:])
}

// Verify checks that sig is quicknet's signature of round r (r >= 1).
func Verify(r uint64, sig []byte) error {
	switch {
	case r == 0:
		return errors.New("beacon: round 0 does not exist (rounds start at 1)")
	case len(sig) != SignatureSize:
		return fmt.Errorf("beacon: a signature of %d bytes, want %d", len(sig), SignatureSize)
	}
	m := Message(r)
	if !bls.Verify(publicKey, m[:], sig) {
		return ErrSignature
	}
	return nil
}

// Randomness is a round's randomness: SHA-256 of its signature. Use it
// only for a signature Verify accepted.
func Randomness(sig []byte) [sha256.Size]byte { return sha256.Sum256(sig) }

// TimeOf is when round r is published (r >= 1).
func TimeOf(r uint64) time.Time {
	return time.Unix(GenesisUnix, 0).Add(time.Duration(r-1) * Period)
}

// RoundAt is the newest round published at t, or 0 before the genesis.
func RoundAt(t time.Time) uint64 {
	d := t.Sub(time.Unix(GenesisUnix, 0))
	if d < 0 {
		return 0
	}
	return uint64(d/Period) + 1
}

// FirstAfter is the first round published at or after t: what a sale fixes
// at creation for a freeze at f with FirstAfter(f.Add(30 * time.Second)).
func FirstAfter(t time.Time) uint64 {
	r := RoundAt(t)
	if r == 0 {
		return 1
	}
	if TimeOf(r).Before(t) {
		r++
	}
	return r
}
