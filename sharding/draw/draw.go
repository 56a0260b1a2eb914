// Package draw is the verifiable draw of a sale's waiting room and raffle
// (SPEC "Fair access"): commit, freeze, beacon, reveal, so that no one, the
// operator included, can choose or aim a place.
//
//  1. At the sale's creation the operator's tool draws a secret Seed and
//     publishes its Commitment (SHA-256), a future Round R of a pinned public
//     beacon (package beacon: drand's quicknet) whose time falls at least
//     its Lead (30 s) after the entries close, and the public half of an
//     Ed25519 key that signs the tree head. The log's first entry says so.
//  2. Each entrant gets a Nonce that only they receive; the entrant's Leaf
//     commits to (sale, user, nonce), so the published leaves name no one.
//  3. When entries close, the leaves are sorted and frozen under their
//     Merkle Root (RFC 6962's tree hash, so any library of Certificate
//     Transparency can check it). The signed tree Head (sale, count, root,
//     freeze time, chain, R) and each entrant's inclusion proof are served
//     from then on, while R does not exist yet.
//  4. At R's time the round is fetched and its signature checked against
//     the pinned key; then the seed is revealed. The draw Key is
//     SHA-256(keyTag || seed || randomness), randomness the round's
//     (SHA-256 of its signature); an entrant's Draw is HMAC-SHA256 under the
//     key of (drawTag || root || leaf); the Place of an entrant is the rank
//     of their draw among all draws, ascending (1 is the smallest draw;
//     equal draws, which SHA-256 makes vanishingly rare, by leaf).
//  5. Every step is an entry of a hash-chained Log (log.go): a second
//     freeze, or a second beacon or reveal without an abort before it, fails
//     every checker.
//
// Neither the seed alone nor the beacon alone fixes a place: the operator
// knows the seed before the freeze but not R's randomness, which does not
// exist until at least the Lead after it; the League of Entropy's round is
// public but the seed is committed. Grinding the root (adding entrants
// until it favours someone) needs the key, which is unknown until the root
// is frozen and witnessed.
//
// # Byte layout
//
// Integers are unsigned big-endian; tags end with a zero byte; || is
// concatenation; hex is lower-case.
//
//	leaf       = SHA-256("flashsale-draw-leaf-v1\x00" || sale u64 || user u64 || nonce[16])
//	leaf node  = SHA-256(0x00 || leaf); inner node = SHA-256(0x01 || left || right)
//	root       = RFC 6962 tree hash of the leaves sorted ascending (bytewise),
//	             split at the largest power of two below the size;
//	             SHA-256("") for no entrant
//	randomness = SHA-256(signature of round R)      (48-byte G1 signature)
//	key        = SHA-256("flashsale-draw-key-v2\x00" || seed[32] || randomness[32])
//	draw       = HMAC-SHA256(key, "flashsale-draw-v1\x00" || root[32] || leaf[32])
//	place      = 1 + the number of entrants whose (draw, leaf) is smaller
//	head       = "flashsale-draw-head-v1\x00" || sale u64 || count u64 || root[32]
//	             || frozen-at unix ms u64 || chain hash[32] || round u64,
//	             signed with Ed25519 (RFC 8032) under the sale's head key
//	log hash   = SHA-256("flashsale-draw-log-v1\x00" || previous hash[32] || body),
//	             the first entry's previous hash 32 zero bytes
//	draw id    = SHA-256("flashsale-draw-id-v1\x00" || sale u64 || count u64 || root[32]
//	             || frozen-at unix ms u64 || seed[32] || round u64 || randomness[32]),
//	             round and randomness zero for a draw without a beacon round: the
//	             revealed draw's address, under which its pages and entries never
//	             change (with the sale's head key and chain it fixes every field)
//
// A sale created before the beacon (its commitment has no round) is drawn
// with key = seed; every checker says it is not beacon-sealed.
//
// # Worked example
//
// Sale 7; users 42 and 43, both with the nonce 000102…0e0f (the bytes 0 to
// 15); seed 32 bytes of 0x11; frozen at 1692806334000 (unix ms, 30 s before
// the round's time); quicknet round 1000, whose signature is
// b44679b9a59af2ec876b1a6b1ad52ea9b1615fc3982b19576350f93447cb1125e342b73a8dd2bacbe47e4b6b63ed5e39.
// TestWorkedExample recomputes every value below from this text:
//
//	commitment = 02d449a31fbb267c8f352e9968a79e3e5fc95c1bbeaa502fd6454ebde5a4bedc
//	leaf 42    = b6ed0c92c0f658d806e8c43f88ac795d0c57dabbce2ecde51f1ff15d699df409
//	leaf 43    = 1340d7181b2d9bd556a4ffcaf56f54144f53853371640e046dc6b139400c1f5d
//	root       = 6914a6be89106659a8fa2328db71109c35c18289c7c4e9051f3895034e735eda  (leaf 43 first)
//	randomness = fe290beca10872ef2fb164d2aa4442de4566183ec51c56ff3cd603d930e54fdd
//	key        = 6ede0f239ea4a3772c6560153870942fc5cb7344a466212da489ac72b1b6fe27
//	draw 42    = 4758cc4f08548f3a10ae8e72dffb44c18b299b5cc8cef2519cd35bc6b3535ae8  place 1
//	draw 43    = 89df7374d2bb60b069e5f30fc8bdedb95038486c73686ebe15a8deb2291f69d6  place 2
//	draw id    = 10f99696cbef6d4ce86b26368a28f6ce25bbce4932dd7a9fc9f42e310af3e117
//
// Anyone can then run Verify on what was published (the seed against its
// commitment, the beacon's signature against the pinned key, the leaves
// against the root, every draw and place), check the Log, and each user
// their own leaf, inclusion proof (VerifyInclusion) and tree head.
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
	"time"

	"flashsale/sharding/draw/beacon"
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

// ParseLowerHash parses b when it is a Hash as published, exactly 64
// lower-case hex digits (the one form an address or a leaf is written in,
// so that one URL names it), without allocating.
func ParseLowerHash(b []byte) (Hash, bool) {
	var h Hash
	if len(b) != 2*len(h) {
		return h, false
	}
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return h, false
		}
	}
	_, _ = hex.Decode(h[:], b) // checked above
	return h, true
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
	keyTag  = "flashsale-draw-key-v2\x00"
	drawTag = "flashsale-draw-v1\x00"
)

// Key is the draw key of a sale sealed by a beacon round: SHA-256 of the
// seed and the round's randomness.
func Key(seed, randomness Hash) Hash {
	var b [len(keyTag) + 2*len(Hash{})]byte
	n := copy(b[:], keyTag)
	n += copy(b[n:], seed[:])
	copy(b[n:], randomness[:])
	return sha256.Sum256(b[:])
}

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

// Draw is an entrant's draw: HMAC-SHA256 under the draw key of (root,
// leaf). The key is Key(seed, randomness), or the seed itself for a sale
// without a beacon round.
func Draw(key, root, leaf Hash) Hash {
	m := hmac.New(sha256.New, key[:])
	m.Write([]byte(drawTag))
	m.Write(root[:])
	m.Write(leaf[:])
	var h Hash
	m.Sum(h[:0])
	return h
}

// Places returns the draws of sorted leaves and their places (1-based):
// places[i] is the rank of draws[i] among all draws, ties broken by leaf.
func Places(key, root Hash, leaves []Hash) (draws []Hash, places []int) {
	draws = make([]Hash, len(leaves))
	order := make([]int, len(leaves))
	m := hmac.New(sha256.New, key[:])
	for i, l := range leaves {
		m.Reset()
		m.Write([]byte(drawTag))
		m.Write(root[:])
		m.Write(l[:])
		m.Sum(draws[i][:0])
		order[i] = i
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

const idTag = "flashsale-draw-id-v1\x00"

// ID is the revealed draw frozen at frozenAt's address: a hash of
// everything that fixes what is published of it (sale, count, root, the
// freeze's time, which fixes the signed tree head, seed, round and
// randomness), so that what is served under it can never change, and
// anyone holding a page can recompute the address it came from.
func ID(sale int64, frozenAt time.Time, p *Published) Hash {
	var b [len(idTag) + 8 + 8 + 32 + 8 + 32 + 8 + 32]byte
	n := copy(b[:], idTag)
	binary.BigEndian.PutUint64(b[n:], uint64(sale))
	binary.BigEndian.PutUint64(b[n+8:], uint64(p.Count))
	n += 16
	n += copy(b[n:], p.Root[:])
	binary.BigEndian.PutUint64(b[n:], uint64(frozenAt.UnixMilli()))
	n += 8
	n += copy(b[n:], p.Seed[:])
	if p.Beacon != nil {
		binary.BigEndian.PutUint64(b[n:], p.Beacon.Round)
		r := beacon.Randomness(p.Beacon.Signature)
		copy(b[n+8:], r[:])
	}
	return sha256.Sum256(b[:])
}

// Published is what a sale publishes of its draw once the seed is revealed:
// the leaves in their sorted order, each with its draw and place.
type Published struct {
	Commitment Hash
	Seed       Hash
	Root       Hash
	Count      int
	// Beacon is the round that seals the draw; nil for a sale created
	// before the beacon (keyed on the seed alone).
	Beacon *Beacon
	Leaves []Hash
	Draws  []Hash
	Places []int
}

// Beacon is a beacon round as a draw uses it.
type Beacon struct {
	Chain     string // the chain's hash (package beacon)
	Round     uint64
	Signature []byte
}

// Check verifies b's signature against its chain's pinned key and returns
// the round's randomness.
func (b *Beacon) Check() (Hash, error) {
	c, err := beacon.ByHash(b.Chain)
	if err != nil {
		return Hash{}, err
	}
	if err := c.Verify(b.Round, b.Signature); err != nil {
		return Hash{}, err
	}
	return beacon.Randomness(b.Signature), nil
}

// KeyOf returns the draw key of seed under b: Key(seed, randomness) once b
// verifies, or the seed itself when b is nil.
func KeyOf(seed Hash, b *Beacon) (Hash, error) {
	if b == nil {
		return seed, nil
	}
	r, err := b.Check()
	if err != nil {
		return Hash{}, err
	}
	return Key(seed, r), nil
}

// ErrMismatch wraps every reason Verify refuses a draw.
var ErrMismatch = errors.New("draw: the published draw does not verify")

// Verify checks a published draw from its own data: the seed against its
// commitment, the beacon round against its chain's key, the count, the
// leaves' order and root, every draw against the key, and every place
// against the draws. The error names the first mismatch.
func Verify(p *Published) error {
	switch {
	case Commitment(p.Seed) != p.Commitment:
		return fmt.Errorf("%w: the seed's SHA-256 is not the commitment published at the sale's creation", ErrMismatch)
	case len(p.Leaves) != p.Count || len(p.Draws) != p.Count || len(p.Places) != p.Count:
		return fmt.Errorf("%w: %d leaves, %d draws and %d places for a count of %d", ErrMismatch, len(p.Leaves), len(p.Draws), len(p.Places), p.Count)
	}
	key, err := KeyOf(p.Seed, p.Beacon)
	if err != nil {
		return fmt.Errorf("%w: the beacon round: %w", ErrMismatch, err)
	}
	for i := 1; i < len(p.Leaves); i++ {
		if bytes.Compare(p.Leaves[i-1][:], p.Leaves[i][:]) >= 0 {
			return fmt.Errorf("%w: leaf %d is not after leaf %d (the leaves are published sorted, once each)", ErrMismatch, i, i-1)
		}
	}
	if Root(p.Leaves) != p.Root {
		return fmt.Errorf("%w: the leaves do not hash to the published root (an entrant added or dropped after the freeze)", ErrMismatch)
	}
	draws, places := Places(key, p.Root, p.Leaves)
	for i := range draws {
		if draws[i] != p.Draws[i] {
			return fmt.Errorf("%w: the draw of leaf %d (%s) is not the key's", ErrMismatch, i, p.Leaves[i])
		}
		if places[i] != p.Places[i] {
			return fmt.Errorf("%w: leaf %d (%s) is published at place %d, its draw ranks %d", ErrMismatch, i, p.Leaves[i], p.Places[i], places[i])
		}
	}
	return nil
}
