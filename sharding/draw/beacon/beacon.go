// Package beacon pins the public randomness beacon of the verifiable draw
// (SPEC "Fair access"): drand's quicknet chain, and checks its rounds
// offline: a round's signature is verified against the pinned public key
// before its randomness is used, so a relay (or anyone between it and us)
// can delay a round but never forge one.
//
// quicknet ("bls-unchained-g1-rfc9380", run by the League of Entropy): a
// round every 3 s from its genesis; round r's message is SHA-256 of r as 8
// bytes big-endian; its signature is a BLS12-381 signature on G1 (48 bytes,
// compressed) under the chain's key on G2 (96 bytes), hashed to the curve
// with RFC 9380's BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_; its
// randomness is SHA-256 of the signature. Unchained: a round does not depend
// on the one before, so one round is checked alone.
//
// Dev is a second chain of the same scheme for the local stack and the
// tests, on a machine that reaches no relay: its secret key is derived from
// a fixed string, so anyone can sign its rounds. It proves nothing, and
// every checker names it as such; a gateway uses it only when its
// configuration says so.
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

// A Chain is a beacon the draw can fix a round of.
type Chain struct {
	// Name is how configurations and checkers call it.
	Name string
	// Hash is the chain's hash, as drand names it (64 hex digits); a sale
	// publishes it with its round.
	Hash string
	// PublicKeyHex is the chain's public key, a compressed G2 point.
	PublicKeyHex string
	Genesis      time.Time
	Period       time.Duration
	// Lead is the least time between the entries' close and the round a
	// sale fixes (SPEC: 30 s for quicknet).
	Lead time.Duration
	// Public: a beacon nobody controls (false for Dev).
	Public bool

	key    *bls.PublicKey[bls.KeyG2SigG1]
	secret *bls.PrivateKey[bls.KeyG2SigG1] // Dev's only
}

// quicknet, as https://api.drand.sh/v2/chains/<hash>/info serves it.
const (
	ChainHash    = "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971"
	PublicKeyHex = "83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a"
	Scheme       = "bls-unchained-g1-rfc9380"
	GenesisUnix  = 1692803367
	Period       = 3 * time.Second
)

// Quicknet is drand's quicknet chain, the default of every sale.
var Quicknet = mustChain(&Chain{Name: "quicknet", Hash: ChainHash, PublicKeyHex: PublicKeyHex,
	Genesis: time.Unix(GenesisUnix, 0), Period: Period, Lead: 30 * time.Second, Public: true})

// devSeed is the fixed input of Dev's secret key.
const devSeed = "flashsale-dev-beacon-v1: a test chain anyone can sign for"

// Dev is the local test chain: rounds every second, a lead of 2 s, a key
// anyone can derive. Its hash is SHA-256 of its public key.
var Dev = func() *Chain {
	sk, err := bls.KeyGen[bls.KeyG2SigG1]([]byte(devSeed), nil, nil)
	if err != nil {
		panic(err)
	}
	pk, err := sk.PublicKey().MarshalBinary()
	if err != nil {
		panic(err)
	}
	h := sha256.Sum256(pk)
	c := mustChain(&Chain{Name: "dev", Hash: hex.EncodeToString(h[:]), PublicKeyHex: hex.EncodeToString(pk),
		Genesis: time.Unix(1700000000, 0), Period: time.Second, Lead: 2 * time.Second})
	c.secret = sk
	return c
}()

// Chains are the chains this build knows, by Hash.
var Chains = map[string]*Chain{Quicknet.Hash: Quicknet, Dev.Hash: Dev}

// ByName returns the chain called name ("quicknet" or "dev").
func ByName(name string) (*Chain, error) {
	for _, c := range Chains {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("beacon: no chain %q (want quicknet or dev)", name)
}

// ByHash returns the chain whose hash is h, or an error naming it.
func ByHash(h string) (*Chain, error) {
	if c, ok := Chains[h]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("beacon: chain %q is not one this build pins (quicknet is %s)", h, ChainHash)
}

func mustChain(c *Chain) *Chain {
	b, err := hex.DecodeString(c.PublicKeyHex)
	if err != nil {
		panic(err)
	}
	c.key = new(bls.PublicKey[bls.KeyG2SigG1])
	if err := c.key.UnmarshalBinary(b); err != nil {
		panic(fmt.Sprintf("beacon: the pinned key of %s: %v", c.Name, err))
	}
	return c
}

// SignatureSize is a round signature's length: a compressed G1 point.
const SignatureSize = 48

// ErrSignature means a round's signature is not the chain's for that round.
var ErrSignature = errors.New("beacon: the signature is not the chain's for this round")

// Message is what a chain of this scheme signs for round r.
func Message(r uint64) [sha256.Size]byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], r)
	return sha256.Sum256(b[:])
}

// Verify checks that sig is c's signature of round r (r >= 1).
func (c *Chain) Verify(r uint64, sig []byte) error {
	switch {
	case r == 0:
		return errors.New("beacon: round 0 does not exist (rounds start at 1)")
	case len(sig) != SignatureSize:
		return fmt.Errorf("beacon: a signature of %d bytes, want %d", len(sig), SignatureSize)
	}
	m := Message(r)
	if !bls.Verify(c.key, m[:], sig) {
		return fmt.Errorf("%w (%s, round %d)", ErrSignature, c.Name, r)
	}
	return nil
}

// Sign signs round r: only Dev can.
func (c *Chain) Sign(r uint64) ([]byte, error) {
	if c.secret == nil {
		return nil, fmt.Errorf("beacon: %s's rounds are signed by its own network, not here", c.Name)
	}
	m := Message(r)
	return bls.Sign(c.secret, m[:]), nil
}

// Randomness is a round's randomness: SHA-256 of its signature. Use it
// only for a signature Verify accepted.
func Randomness(sig []byte) [sha256.Size]byte { return sha256.Sum256(sig) }

// TimeOf is when round r is published (r >= 1).
func (c *Chain) TimeOf(r uint64) time.Time {
	return c.Genesis.Add(time.Duration(r-1) * c.Period)
}

// RoundAt is the newest round published at t, or 0 before the genesis.
func (c *Chain) RoundAt(t time.Time) uint64 {
	d := t.Sub(c.Genesis)
	if d < 0 {
		return 0
	}
	return uint64(d/c.Period) + 1
}

// FirstAfter is the first round published at or after t.
func (c *Chain) FirstAfter(t time.Time) uint64 {
	r := c.RoundAt(t)
	if r == 0 {
		return 1
	}
	if c.TimeOf(r).Before(t) {
		r++
	}
	return r
}

// RoundFor is the round a sale whose entries close at close fixes at its
// creation: the first published at least Lead after the close.
func (c *Chain) RoundFor(close time.Time) uint64 { return c.FirstAfter(close.Add(c.Lead)) }
