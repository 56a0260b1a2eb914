package draw

import (
	"errors"
	"strings"
	"testing"
)

// TestRootMatchesRFC6962: the tree hash is Certificate Transparency's, so
// any of its libraries can check a sale's root: the empty tree and a tree
// of one empty-hash leaf give RFC 6962's values.
func TestRootMatchesRFC6962(t *testing.T) {
	if got := Root(nil).String(); got != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("empty tree: %s", got)
	}
	// SHA-256(0x00 || 32 zero bytes)
	if got, want := Root([]Hash{{}}), leafHash(Hash{}); got != want {
		t.Fatalf("one leaf: %s, want %s", got, want)
	}
	// Three leaves split 2 + 1.
	a, b, c := Hash{1}, Hash{2}, Hash{3}
	if got, want := Root([]Hash{a, b, c}), nodeHash(nodeHash(leafHash(a), leafHash(b)), leafHash(c)); got != want {
		t.Fatalf("three leaves: %s, want %s", got, want)
	}
}

// TestInclusionProofs: every leaf of trees of 1 to 40 leaves proves its
// place under the root, and no proof holds for another leaf, another index
// or a shortened path. (The tree's size is published with its root.)
func TestInclusionProofs(t *testing.T) {
	for n := 1; n <= 40; n++ {
		leaves := entrants(9, n)
		root := Root(leaves)
		for i := range leaves {
			p := Proof(leaves, i)
			if !VerifyInclusion(leaves[i], i, n, p, root) {
				t.Fatalf("n=%d: leaf %d does not prove", n, i)
			}
			if n > 1 {
				j := (i + 1) % n
				if VerifyInclusion(leaves[j], i, n, p, root) || VerifyInclusion(leaves[i], j, n, p, root) {
					t.Fatalf("n=%d: leaf %d's proof holds for another leaf or index", n, i)
				}
				if VerifyInclusion(leaves[i], i, n, p[:len(p)-1], root) {
					t.Fatalf("n=%d: a shortened proof holds", n)
				}
			}
		}
	}
	if VerifyInclusion(Hash{}, -1, 3, nil, Hash{}) || VerifyInclusion(Hash{}, 3, 3, nil, Hash{}) {
		t.Fatal("an index out of range proved")
	}
}

// TestPublishedDrawVerifies: a draw of 1,000 entrants, published, verifies;
// each entrant finds their leaf from their own id and nonce and proves it;
// the places are a permutation ranked by draw.
func TestPublishedDrawVerifies(t *testing.T) {
	p, nonces := publish(t, 1000)
	if err := Verify(p); err != nil {
		t.Fatal(err)
	}
	seen := make([]bool, p.Count+1)
	for i, pl := range p.Places {
		if pl < 1 || pl > p.Count || seen[pl] {
			t.Fatalf("place %d of leaf %d: not a permutation", pl, i)
		}
		seen[pl] = true
	}
	for u := uint64(1); u <= 1000; u += 97 {
		leaf := Leaf(7, u, nonces[u])
		i := index(p.Leaves, leaf)
		if i < 0 || !VerifyInclusion(leaf, i, p.Count, Proof(p.Leaves, i), p.Root) {
			t.Fatalf("user %d cannot find or prove their leaf", u)
		}
		if Draw(p.Seed, p.Root, leaf) != p.Draws[i] {
			t.Fatalf("user %d's draw is not theirs", u)
		}
	}
}

// TestTamperingFails: the three ways to cheat a published draw each fail
// verification, and say why: an entrant added after the freeze, a seed
// changed after the commitment, a place moved.
func TestTamperingFails(t *testing.T) {
	cases := []struct {
		name   string
		tamper func(p *Published)
		want   string
	}{
		{"entrant added after the freeze", func(p *Published) {
			extra := Leaf(7, 5000, NewNonce())
			p.Leaves = append(p.Leaves, extra)
			Sort(p.Leaves)
			p.Count++
			p.Draws, p.Places = Places(p.Seed, p.Root, p.Leaves)
		}, "do not hash to the published root"},
		{"seed changed", func(p *Published) {
			p.Seed = NewSeed()
			p.Draws, p.Places = Places(p.Seed, p.Root, p.Leaves)
		}, "not the commitment"},
		{"place moved", func(p *Published) {
			a, b := 0, 1
			p.Places[a], p.Places[b] = p.Places[b], p.Places[a]
		}, "is published at place"},
		{"draw changed", func(p *Published) { p.Draws[3][0] ^= 1 }, "is not the key's"},
		{"entrant dropped", func(p *Published) {
			p.Leaves = p.Leaves[1:]
			p.Count--
			p.Draws, p.Places = Places(p.Seed, p.Root, p.Leaves)
		}, "do not hash to the published root"},
		{"leaves out of order", func(p *Published) { p.Leaves[0], p.Leaves[1] = p.Leaves[1], p.Leaves[0] }, "is not after leaf"},
		{"count off", func(p *Published) { p.Count++ }, "for a count of"},
	}
	for _, tc := range cases {
		p, _ := publish(t, 50)
		tc.tamper(p)
		err := Verify(p)
		if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a mismatch saying %q", tc.name, err, tc.want)
		}
	}
	// A dropped entrant's own proof fails against the published root.
	p, nonces := publish(t, 50)
	leaf := Leaf(7, 1, nonces[1])
	i := index(p.Leaves, leaf)
	proof := Proof(p.Leaves, i)
	rest := append(append([]Hash(nil), p.Leaves[:i]...), p.Leaves[i+1:]...)
	if VerifyInclusion(leaf, i, len(rest), proof, Root(rest)) {
		t.Fatal("a dropped entrant's proof holds against the root without them")
	}
}

func TestParseHash(t *testing.T) {
	h := NewSeed()
	if got, err := ParseHash(h.String()); err != nil || got != h {
		t.Fatalf("round trip: %v %v", got, err)
	}
	for _, s := range []string{"", "00", strings.Repeat("zz", 32), strings.Repeat("0", 63)} {
		if _, err := ParseHash(s); err == nil {
			t.Errorf("ParseHash(%q) accepted", s)
		}
	}
}

func TestSortFindsDuplicates(t *testing.T) {
	l := entrants(7, 10)
	if Sort(l) {
		t.Fatal("distinct leaves reported equal")
	}
	l = append(l, l[4])
	if !Sort(l) {
		t.Fatal("an entrant entered twice went unseen")
	}
}

func entrants(sale int64, n int) []Hash {
	leaves := make([]Hash, n)
	for i := range leaves {
		leaves[i] = Leaf(sale, uint64(i+1), Nonce{byte(i), byte(i >> 8)})
	}
	Sort(leaves)
	return leaves
}

// publish runs a whole draw of n entrants of sale 7 (users 1..n) and
// returns what the sale publishes, and each user's nonce.
func publish(t *testing.T, n int) (*Published, map[uint64]Nonce) {
	t.Helper()
	seed := NewSeed()
	nonces := map[uint64]Nonce{}
	leaves := make([]Hash, 0, n)
	for u := uint64(1); u <= uint64(n); u++ {
		nonces[u] = NewNonce()
		leaves = append(leaves, Leaf(7, u, nonces[u]))
	}
	if Sort(leaves) {
		t.Fatal("duplicate leaves")
	}
	p := &Published{Commitment: Commitment(seed), Seed: seed, Root: Root(leaves), Count: n, Leaves: leaves}
	p.Draws, p.Places = Places(seed, p.Root, leaves)
	return p, nonces
}

func index(leaves []Hash, l Hash) int {
	for i := range leaves {
		if leaves[i] == l {
			return i
		}
	}
	return -1
}

// TestParseNonce: a nonce's text reads back as the nonce; anything but 32
// lower-case hex digits is refused.
func TestParseNonce(t *testing.T) {
	n := NewNonce()
	if got, err := ParseNonce(n.String()); err != nil || got != n {
		t.Fatalf("%s read back as %s (%v)", n, got, err)
	}
	for _, bad := range []string{"", n.String()[:30], n.String() + "00", "0F" + n.String()[2:], "zz" + n.String()[2:]} {
		if _, err := ParseNonce(bad); err == nil {
			t.Errorf("nonce %q accepted", bad)
		}
	}
}
