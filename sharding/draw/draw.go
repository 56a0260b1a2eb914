// Package draw is the verifiable draw of a sale's waiting room and raffle
// (SPEC "Fair access"): commit, then reveal, so that no one, the operator
// included, can choose a place.
//
//  1. At the sale's creation the operator's tool draws a secret Seed and
//     publishes only its Commitment (SHA-256).
//  2. Each entrant gets a Nonce that only they receive; the entrant's Leaf
//     commits to (sale, user, nonce), so the published leaves name no one.
//  3. When entries close, the leaves are sorted and frozen under their
//     Merkle Root (RFC 6962's tree hash, so any library of Certificate
//     Transparency can check it); the root and the count are published.
//  4. Then the seed is revealed. An entrant's Draw is the HMAC-SHA256 of
//     (root, leaf) under the seed: it cannot be aimed before the freeze
//     (the root is not known) nor after it (the seed is committed). The
//     Place of an entrant is the rank of their draw among all draws (1 is
//     first; equal draws, which SHA-256 makes vanishingly rare, by leaf).
//
// Anyone can then run Verify on what was published: the seed matches its
// commitment, the leaves hash to the root, every draw comes from the seed,
// and the places follow the draws. Each user checks their own leaf (from
// their id and nonce) and its inclusion proof (VerifyInclusion): an
// entrant dropped after the freeze, or added, changes the root, and a
// changed seed fails its commitment.
//
// The draw is keyed on the leaf rather than on the bare user id, so that a
// revealed seed does not let anyone test a guessed user id against the
// published draws; the leaf commits to the sale and the user all the same.
//
// What this cannot stop: an operator who knows the seed before the freeze
// adding entrants of their own until the root favours someone. Every such
// entrant is a leaf in the published count; a sale that wants to close this
// too mixes in randomness nobody knows before the freeze (a public beacon)
// with the root.
package draw

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
)

// Hash is a SHA-256 value: a seed, a commitment, a leaf, a root or a draw.
type Hash [sha256.Size]byte

// String returns h in lower-case hex, as published.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// ParseHash parses the hex form of a Hash.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*len(h) {
		return h, fmt.Errorf("draw: %q is not %d hex digits", s, 2*len(h))
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("draw: %q: %w", s, err)
	}
	return h, nil
}

// Nonce is an entrant's secret, given to them alone at entry.
type Nonce [16]byte

// String returns n in lower-case hex, as an entrant receives it.
func (n Nonce) String() string { return hex.EncodeToString(n[:]) }

// ParseNonce parses a nonce's text: exactly 32 lower-case hex digits, the
// one form String writes and room_join.lua keeps.
func ParseNonce(s string) (Nonce, error) {
	var n Nonce
	if len(s) != 2*len(n) {
		return n, fmt.Errorf("draw: nonce %q is not %d hex digits", s, 2*len(n))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return n, fmt.Errorf("draw: nonce %q is not lower-case hex", s)
		}
	}
	_, _ = hex.Decode(n[:], []byte(s)) // checked above
	return n, nil
}

// NewSeed draws a secret seed.
func NewSeed() Hash {
	var h Hash
	_, _ = rand.Read(h[:]) // crypto/rand.Read never fails (Go 1.24)
	return h
}

// NewNonce draws an entrant's nonce.
func NewNonce() Nonce {
	var n Nonce
	_, _ = rand.Read(n[:])
	return n
}

// Commitment is the published SHA-256 of seed.
func Commitment(seed Hash) Hash { return sha256.Sum256(seed[:]) }

// Leaf is the commitment to one entrant of a sale.
func Leaf(saleID int64, userID uint64, nonce Nonce) Hash {
	var b [len(leafTag) + 16 + len(Nonce{})]byte
	n := copy(b[:], leafTag)
	binary.BigEndian.PutUint64(b[n:], uint64(saleID))
	binary.BigEndian.PutUint64(b[n+8:], userID)
	copy(b[n+16:], nonce[:])
	return sha256.Sum256(b[:])
}

const (
	leafTag = "flashsale-draw-leaf-v1\x00"
	drawTag = "flashsale-draw-v1\x00"
)

// Sort sorts leaves into the published order (ascending bytes) and reports
// whether two were equal (an entrant entered twice: the caller refuses it).
func Sort(leaves []Hash) (dup bool) {
	slices.SortFunc(leaves, func(a, b Hash) int { return bytes.Compare(a[:], b[:]) })
	for i := 1; i < len(leaves); i++ {
		if leaves[i] == leaves[i-1] {
			return true
		}
	}
	return false
}

// Root is RFC 6962's Merkle tree hash of leaves, in the order given (the
// sorted order, see Sort): a leaf node is SHA-256(0x00 || leaf), an inner
// node SHA-256(0x01 || left || right), the tree split at the largest power
// of two below its size.
func Root(leaves []Hash) Hash {
	if len(leaves) == 0 {
		return sha256.Sum256(nil)
	}
	return mth(leaves)
}

func mth(d []Hash) Hash {
	if len(d) == 1 {
		return leafHash(d[0])
	}
	k := split(len(d))
	return nodeHash(mth(d[:k]), mth(d[k:]))
}

func leafHash(l Hash) Hash {
	var b [1 + len(Hash{})]byte
	copy(b[1:], l[:])
	return sha256.Sum256(b[:])
}

func nodeHash(l, r Hash) Hash {
	var b [1 + 2*len(Hash{})]byte
	b[0] = 1
	copy(b[1:], l[:])
	copy(b[1+len(l):], r[:])
	return sha256.Sum256(b[:])
}

// split returns the largest power of two less than n (n > 1).
func split(n int) int {
	k := 1
	for k<<1 < n {
		k <<= 1
	}
	return k
}

// Proof returns the inclusion proof of leaves[i] in Root(leaves): RFC 6962's
// audit path, from the leaf's sibling up.
func Proof(leaves []Hash, i int) []Hash {
	if i < 0 || i >= len(leaves) {
		return nil
	}
	return path(i, leaves)
}

func path(m int, d []Hash) []Hash {
	if len(d) == 1 {
		return nil
	}
	k := split(len(d))
	if m < k {
		return append(path(m, d[:k]), mth(d[k:]))
	}
	return append(path(m-k, d[k:]), mth(d[:k]))
}

// VerifyInclusion reports whether proof shows leaf at index i of a tree of
// n leaves whose root is root.
func VerifyInclusion(leaf Hash, i, n int, proof []Hash, root Hash) bool {
	if i < 0 || i >= n {
		return false
	}
	h, ok := climb(leafHash(leaf), i, n, proof)
	return ok && h == root
}

// climb rebuilds the root from a node at index i of a subtree of n leaves
// and the proof of it (RFC 9162 2.1.3.2, recursively).
func climb(h Hash, i, n int, proof []Hash) (Hash, bool) {
	if n == 1 {
		return h, len(proof) == 0
	}
	if len(proof) == 0 {
		return h, false
	}
	k := split(n)
	sib := proof[len(proof)-1]
	rest := proof[:len(proof)-1]
	if i < k {
		l, ok := climb(h, i, k, rest)
		return nodeHash(l, sib), ok
	}
	r, ok := climb(h, i-k, n-k, rest)
	return nodeHash(sib, r), ok
}

// Draw is an entrant's draw: HMAC-SHA256 under the seed of (root, leaf).
func Draw(seed, root, leaf Hash) Hash {
	m := hmac.New(sha256.New, seed[:])
	m.Write([]byte(drawTag))
	m.Write(root[:])
	m.Write(leaf[:])
	var h Hash
	m.Sum(h[:0])
	return h
}

// Places returns the draws of sorted leaves and their places (1-based):
// places[i] is the rank of draws[i] among all draws, ties broken by leaf.
func Places(seed, root Hash, leaves []Hash) (draws []Hash, places []int) {
	draws = make([]Hash, len(leaves))
	order := make([]int, len(leaves))
	for i, l := range leaves {
		draws[i], order[i] = Draw(seed, root, l), i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := bytes.Compare(draws[a][:], draws[b][:]); c != 0 {
			return c
		}
		return bytes.Compare(leaves[a][:], leaves[b][:])
	})
	places = make([]int, len(leaves))
	for rank, i := range order {
		places[i] = rank + 1
	}
	return draws, places
}

// Published is what a sale publishes of its draw once the seed is revealed:
// the leaves in their sorted order, each with its draw and place.
type Published struct {
	Commitment Hash
	Seed       Hash
	Root       Hash
	Count      int
	Leaves     []Hash
	Draws      []Hash
	Places     []int
}

// ErrMismatch wraps every reason Verify refuses a draw.
var ErrMismatch = errors.New("draw: the published draw does not verify")

// Verify checks a published draw from its own data: the seed against its
// commitment, the count, the leaves' order and root, every draw against the
// seed, and every place against the draws. The error names the first
// mismatch.
func Verify(p *Published) error {
	switch {
	case Commitment(p.Seed) != p.Commitment:
		return fmt.Errorf("%w: the seed's SHA-256 is not the commitment published at the sale's creation", ErrMismatch)
	case len(p.Leaves) != p.Count || len(p.Draws) != p.Count || len(p.Places) != p.Count:
		return fmt.Errorf("%w: %d leaves, %d draws and %d places for a count of %d", ErrMismatch, len(p.Leaves), len(p.Draws), len(p.Places), p.Count)
	}
	for i := 1; i < len(p.Leaves); i++ {
		if bytes.Compare(p.Leaves[i-1][:], p.Leaves[i][:]) >= 0 {
			return fmt.Errorf("%w: leaf %d is not after leaf %d (the leaves are published sorted, once each)", ErrMismatch, i, i-1)
		}
	}
	if Root(p.Leaves) != p.Root {
		return fmt.Errorf("%w: the leaves do not hash to the published root (an entrant added or dropped after the freeze)", ErrMismatch)
	}
	draws, places := Places(p.Seed, p.Root, p.Leaves)
	for i := range draws {
		if draws[i] != p.Draws[i] {
			return fmt.Errorf("%w: the draw of leaf %d (%s) is not the seed's", ErrMismatch, i, p.Leaves[i])
		}
		if places[i] != p.Places[i] {
			return fmt.Errorf("%w: leaf %d (%s) is published at place %d, its draw ranks %d", ErrMismatch, i, p.Leaves[i], p.Places[i], places[i])
		}
	}
	return nil
}
