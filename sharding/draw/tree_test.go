package draw

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTreeIsProofAndRoot: a Tree's root and proofs are Root's and Proof's,
// for sizes around its kept subtrees (treeChunk and its powers of two,
// one off each way) and random ones, at every index of small trees and
// at random and edge indexes of large ones.
func TestTreeIsProofAndRoot(t *testing.T) {
	sizes := []int{0, 1, 2, 3, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 2047, 2048, 2049}
	for range 6 {
		sizes = append(sizes, 1+rand.IntN(5000))
	}
	for _, n := range sizes {
		leaves := make([]Hash, n)
		for i := range leaves {
			leaves[i] = Leaf(1, uint64(i+1), NewNonce())
		}
		Sort(leaves)
		tr := NewTree(leaves)
		if tr.Root() != Root(leaves) {
			t.Fatalf("%d leaves: the tree's root is not Root's", n)
		}
		idx := []int{0, n - 1, n / 2, treeChunk - 1, treeChunk, 2*treeChunk + 1}
		if n <= 300 {
			idx = idx[:0]
			for i := range n {
				idx = append(idx, i)
			}
		}
		for range 20 {
			idx = append(idx, rand.IntN(n+1))
		}
		for _, i := range idx {
			if i < 0 || i >= n {
				if tr.Proof(i) != nil {
					t.Fatalf("%d leaves: a proof of index %d", n, i)
				}
				continue
			}
			p := tr.Proof(i)
			if !slices.Equal(p, Proof(leaves, i)) || !VerifyInclusion(leaves[i], i, n, p, tr.Root()) {
				t.Fatalf("%d leaves: the tree's proof of index %d is not Proof's", n, i)
			}
		}
	}
}

// BenchmarkProof compares a proof in a draw of 100,000 entrants from the
// Tree and from the leaves alone.
func BenchmarkProof(b *testing.B) {
	leaves := make([]Hash, 100_000)
	for i := range leaves {
		leaves[i] = Leaf(1, uint64(i+1), NewNonce())
	}
	Sort(leaves)
	tr := NewTree(leaves)
	b.Run("tree", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			tr.Proof(i % len(leaves))
		}
	})
	b.Run("leaves", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			Proof(leaves, i%len(leaves))
		}
	})
}
