package draw

import "crypto/sha256"

// Tree is the Merkle tree of a frozen draw's sorted leaves, keeping the
// hashes of its aligned perfect subtrees of at least treeChunk leaves, so
// that an inclusion proof costs O(treeChunk + log n) hashes rather than
// Proof's O(n): a gateway serves every entrant's proof (GET .../draw/me)
// from it. It holds about 2n/treeChunk hashes beside the leaves.
//
// In RFC 6962's tree every subtree starts at a multiple of the largest
// power of two not above its size, so a perfect subtree is found by its
// start and size alone.
type Tree struct {
	leaves  []Hash
	perfect map[span]Hash
}

type span struct{ start, size int }

// treeChunk is the smallest subtree a Tree keeps.
const treeChunk = 256

// NewTree builds the tree of leaves (in their published order); leaves must
// not change afterwards.
func NewTree(leaves []Hash) *Tree {
	t := &Tree{leaves: leaves, perfect: map[span]Hash{}}
	for start := 0; start+treeChunk <= len(leaves); start += treeChunk {
		t.perfect[span{start, treeChunk}] = mth(leaves[start : start+treeChunk])
	}
	for size := 2 * treeChunk; size <= len(leaves); size *= 2 {
		for start := 0; start+size <= len(leaves); start += size {
			t.perfect[span{start, size}] = nodeHash(t.perfect[span{start, size / 2}], t.perfect[span{start + size/2, size / 2}])
		}
	}
	return t
}

// Root is Root(leaves).
func (t *Tree) Root() Hash {
	if len(t.leaves) == 0 {
		return sha256.Sum256(nil)
	}
	return t.mth(0, len(t.leaves))
}

// Proof is Proof(leaves, i).
func (t *Tree) Proof(i int) []Hash {
	if i < 0 || i >= len(t.leaves) {
		return nil
	}
	return t.path(i, 0, len(t.leaves))
}

func (t *Tree) mth(start, size int) Hash {
	if h, ok := t.perfect[span{start, size}]; ok {
		return h
	}
	if size == 1 {
		return leafHash(t.leaves[start])
	}
	k := split(size)
	return nodeHash(t.mth(start, k), t.mth(start+k, size-k))
}

func (t *Tree) path(m, start, size int) []Hash {
	if size == 1 {
		return nil
	}
	k := split(size)
	if m < k {
		return append(t.path(m, start, k), t.mth(start+k, size-k))
	}
	return append(t.path(m-k, start+k, size-k), t.mth(start, k))
}
