package draw

import (
	"bytes"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"
)

// TestGrindingDrill is issue 59's drill: the beacon closes the grinding
// hole, and the seed-only draw (key = seed, the sales created before the
// beacon) does not.
//
// The incident: a shop knows its own seed before the freeze. Under the
// seed-only key it can compute every draw of any set of leaves, so it can
// add entrants of its own, or re-draw their nonces, until the root makes
// the draw of someone it chose small (place 1 is the smallest draw), then
// freeze that set. Under the beacon the key is Key(seed, randomness), the
// randomness a round that does not exist until after the freeze, so the
// same work aims at nothing.
//
// The drill: in each of many seeded sales, honest entrants with random
// user ids and nonces join; the operator adds entrants of its own (its own
// user ids and nonces), one of them its chosen user. Knowing the seed, it
// tries trials variants of the nonce of its last entrant, computes each
// variant's root and the chosen user's draw under the key it can compute,
// and freezes the variant whose draw is smallest:
//
//   - seed-only: the key it computes, the seed, is the real key;
//   - beacon: it cannot know the round's randomness, so it computes
//     Key(seed, zero randomness), its best guess; the real randomness is
//     drawn afterwards, per sale. (Were Key to stop depending on the
//     randomness, the guess would be the real key and this row would show
//     the seed-only bias: the drill fails if the draw regresses to seed-only
//     keying.)
//
// Both kinds grind over the same sales, the same roots and the same
// variants; only the key differs. The real places of the frozen set then
// come from Places. Measured over all sales: (a) the chi-square of the
// operator's entrants' normalized places (20 bins) against uniform, (b) the
// chosen user's mean normalized place ((place-1)/(n-1), 0.5 for a fair draw,
// about 1/(trials+1) for a ground one) and the chi-square of its places.
// The beacon row must pass both (p >= 0.01, the mean within six standard
// errors of 0.5); the seed-only row must fail (b) (p < 0.01, a mean below
// 0.25), which shows the drill can see the hole it says is closed.
//
// The operator's entrants in bulk barely show the seed-only bias (one user
// in 10,000 is moved; at the full size its shift into the first bin is
// about two standard deviations of that bin, p 0.011 against the beacon's
// 0.91), so (a) is asserted for the beacon only: (b) is the telling row.
// A real grinder does far better than trials tries (a nonce whose leaf
// sorts last makes a try O(log n) hashes, so millions are cheap); trials is
// the drill's budget, enough to show the bias, not the attacker's.
//
// By default a reduced drill runs (100 sales, 100 honest entrants, 1,000 of
// the operator's, 16 trials, half a second); FLASHSALE_DRILL=full runs the
// issue's size (1,000 sales, 1,000 honest, 10,000 of the operator's, about
// a minute on one core):
//
//	FLASHSALE_DRILL=full go test -count=1 -v -run '^TestGrindingDrill$' ./sharding/draw/
func TestGrindingDrill(t *testing.T) {
	sz := drillSize{sales: 100, honest: 100, operator: 1_000, trials: 16}
	if os.Getenv("FLASHSALE_DRILL") == "full" {
		sz = drillSize{sales: 1_000, honest: 1_000, operator: 10_000, trials: 16}
	}
	n := sz.honest + sz.operator
	seedOnly, sealed := newTally("seed-only (key = seed)", n, sz), newTally("beacon (key = Key(seed, randomness))", n, sz)
	rng := rand.New(rand.NewPCG(59, 2026))
	start := time.Now()
	for s := range sz.sales {
		grindSale(t, rng, int64(s+1), sz, seedOnly, sealed)
	}
	took := time.Since(start)

	t.Logf("grinding drill, %d sales, %d honest and %d operator entrants each, %d trials, %s:\n"+
		"| draw | sales | operator entrants | trials | operator's places p | chosen user's mean place | chosen user's p | chosen user in the first 5%% |\n"+
		"|---|---|---|---|---|---|---|---|\n%s\n%s",
		sz.sales, sz.honest, sz.operator, sz.trials, took.Round(time.Millisecond), seedOnly.row(), sealed.row())

	// Six standard errors of the mean of sales uniform places.
	margin := 6 * math.Sqrt(1.0/12/float64(sz.sales))
	if p := sealed.operatorP(); p < 0.01 {
		t.Errorf("beacon: the operator's entrants' places are not uniform (chi-square p = %.3g)", p)
	}
	if p, m := sealed.chosenP(), sealed.chosenMean(); p < 0.01 || math.Abs(m-0.5) > margin {
		t.Errorf("beacon: the chosen user's places are not uniform (p = %.3g, mean %.4f, want 0.5 ± %.3f): grinding the root pays", p, m, margin)
	}
	if p, m := seedOnly.chosenP(), seedOnly.chosenMean(); p >= 0.01 || m >= 0.25 {
		t.Errorf("seed-only: the chosen user's places look uniform (p = %.3g, mean %.4f): the drill no longer sees the hole it checks is closed", p, m)
	}
}

type drillSize struct{ sales, honest, operator, trials int }

// grindSale runs one sale: the honest entrants, the operator's, its
// grinding for each kind of key, the freeze and the real places.
func grindSale(t *testing.T, rng *rand.Rand, sale int64, sz drillSize, seedOnly, sealed *tally) {
	t.Helper()
	seed := randomHash(rng)
	base := make([]Hash, 0, sz.honest+sz.operator-1) // everyone but the varied entrant
	for range sz.honest {
		base = append(base, Leaf(sale, rng.Uint64(), randomNonce(rng)))
	}
	mine := make([]Hash, 0, sz.operator-1) // the operator's, but the varied one
	for range sz.operator - 1 {
		mine = append(mine, Leaf(sale, rng.Uint64(), randomNonce(rng)))
	}
	chosen := mine[0]
	base = append(base, mine...)
	if Sort(base) {
		t.Fatal("two entrants with one leaf")
	}
	filler := rng.Uint64() // the operator's last entrant, whose nonce it grinds

	// The operator's grinding: each variant's root once, the chosen user's
	// draw under each key the operator can compute.
	g := newGrinder(base)
	guess := Key(seed, Hash{})
	type best struct{ leaf, root, draw Hash }
	var bySeed, byGuess best
	for i := range sz.trials {
		v := Leaf(sale, filler, randomNonce(rng))
		root := g.root(v)
		if d := Draw(seed, root, chosen); i == 0 || bytes.Compare(d[:], bySeed.draw[:]) < 0 {
			bySeed = best{v, root, d}
		}
		if d := Draw(guess, root, chosen); i == 0 || bytes.Compare(d[:], byGuess.draw[:]) < 0 {
			byGuess = best{v, root, d}
		}
	}

	// The freeze, then the key: the beacon's randomness is drawn only now.
	randomness := randomHash(rng)
	for _, k := range []struct {
		tl   *tally
		pick best
		key  Hash
	}{{seedOnly, bySeed, seed}, {sealed, byGuess, Key(seed, randomness)}} {
		leaves := slices.Clone(base)
		at, _ := slices.BinarySearchFunc(leaves, k.pick.leaf, compareHash)
		leaves = slices.Insert(leaves, at, k.pick.leaf)
		root := Root(leaves)
		if root != k.pick.root {
			t.Fatalf("sale %d: the grinder's root %s is not Root's %s", sale, k.pick.root, root)
		}
		_, places := Places(k.key, root, leaves)
		k.tl.operatorPlace(places[at])
		for _, l := range mine {
			i, _ := slices.BinarySearchFunc(leaves, l, compareHash)
			k.tl.operatorPlace(places[i])
			if l == chosen {
				k.tl.chosenPlace(places[i])
			}
		}
	}
}

func compareHash(a, b Hash) int { return bytes.Compare(a[:], b[:]) }

func randomHash(rng *rand.Rand) Hash {
	var h Hash
	for i := 0; i < len(h); i += 8 {
		u := rng.Uint64()
		for j := range 8 {
			h[i+j] = byte(u >> (8 * j))
		}
	}
	return h
}

func randomNonce(rng *rand.Rand) Nonce {
	var n Nonce
	h := randomHash(rng)
	copy(n[:], h[:])
	return n
}

// grinder computes the root of sorted base leaves with one leaf more,
// inserted in its sorted place: every perfect subtree left of the inserted
// leaf is base's, kept from the start, so a try costs about as many hashes
// as there are leaves right of it (half of Root's, on average) rather than
// all of them.
type grinder struct {
	// levels[k][i] is the hash of base's perfect subtree of 2^k leaves
	// from leaf i<<k; levels[0] the leaf nodes.
	levels [][]Hash
	base   []Hash
	at     int  // the inserted leaf's index
	node   Hash // its leaf node
}

func newGrinder(base []Hash) *grinder {
	lv := make([]Hash, len(base))
	for i, l := range base {
		lv[i] = leafHash(l)
	}
	g := &grinder{levels: [][]Hash{lv}, base: base}
	for len(lv) >= 2 {
		up := make([]Hash, len(lv)/2)
		for i := range up {
			up[i] = nodeHash(lv[2*i], lv[2*i+1])
		}
		g.levels = append(g.levels, up)
		lv = up
	}
	return g
}

// root is Root of base with leaf inserted in its sorted place.
func (g *grinder) root(leaf Hash) Hash {
	g.at, _ = slices.BinarySearchFunc(g.base, leaf, compareHash)
	g.node = leafHash(leaf)
	return g.mth(0, len(g.base)+1)
}

// mth is RFC 6962's tree hash of the size leaves from start, with the
// inserted leaf. Every perfect subtree of the tree starts at a multiple of
// its size (see Tree), so one left of the inserted leaf is base's.
func (g *grinder) mth(start, size int) Hash {
	if size&(size-1) == 0 && start+size <= g.at {
		k := bits.TrailingZeros(uint(size))
		return g.levels[k][start>>k]
	}
	if size == 1 { // at or right of the inserted leaf
		if start == g.at {
			return g.node
		}
		return g.levels[0][start-1]
	}
	k := split(size)
	return nodeHash(g.mth(start, k), g.mth(start+k, size-k))
}

// tally gathers one kind of draw's places over the sales.
type tally struct {
	kind          string
	n             int // entrants per sale
	sz            drillSize
	operatorBins  []int
	chosenBins    []int
	chosen        []float64 // the chosen user's normalized places
	chosenLeading int       // sales whose chosen user placed in the first 5%
}

func newTally(kind string, n int, sz drillSize) *tally {
	bins := 20
	if sz.sales < 200 { // at least ten expected in each bin
		bins = 10
	}
	return &tally{kind: kind, n: n, sz: sz, operatorBins: make([]int, 20), chosenBins: make([]int, bins)}
}

// bin returns the bin of place p (1..n) among b bins.
func (tl *tally) bin(p, b int) int { return (p - 1) * b / tl.n }

func (tl *tally) operatorPlace(p int) { tl.operatorBins[tl.bin(p, len(tl.operatorBins))]++ }

func (tl *tally) chosenPlace(p int) {
	tl.chosenBins[tl.bin(p, len(tl.chosenBins))]++
	tl.chosen = append(tl.chosen, float64(p-1)/float64(tl.n-1))
	if 20*(p-1) < tl.n {
		tl.chosenLeading++
	}
}

// expected returns each of b bins' share of the places 1..n.
func (tl *tally) expected(b int) []float64 {
	e := make([]float64, b)
	for p := 1; p <= tl.n; p++ {
		e[tl.bin(p, b)] += 1 / float64(tl.n)
	}
	return e
}

// operatorP is the chi-square p-value of the operator's entrants' places.
// A sale's operator entrants take distinct places, a random subset of 1..n
// when the draw is fair, so their bin counts are hypergeometric: their
// variance is the multinomial's times (n-m)/(n-1), m of the n entrants
// the operator's. Pearson's statistic is divided by that factor; without it
// the statistic would be about a tenth of a chi-square's and p near 1
// whatever the places.
func (tl *tally) operatorP() float64 {
	m := tl.sz.operator
	fpc := float64(tl.n-m) / float64(tl.n-1)
	return chiSquareP(pearson(tl.operatorBins, tl.expected(len(tl.operatorBins)))/fpc, len(tl.operatorBins)-1)
}

// chosenP is the chi-square p-value of the chosen user's places, one a sale.
func (tl *tally) chosenP() float64 {
	return chiSquareP(pearson(tl.chosenBins, tl.expected(len(tl.chosenBins))), len(tl.chosenBins)-1)
}

func (tl *tally) chosenMean() float64 {
	s := 0.0
	for _, x := range tl.chosen {
		s += x
	}
	return s / float64(len(tl.chosen))
}

func (tl *tally) row() string {
	return fmt.Sprintf("| %s | %d | %d | %d | %.3g | %.4f | %.3g | %.1f%% |", tl.kind, tl.sz.sales, tl.sz.operator, tl.sz.trials,
		tl.operatorP(), tl.chosenMean(), tl.chosenP(), 100*float64(tl.chosenLeading)/float64(len(tl.chosen)))
}

// pearson is Pearson's chi-square statistic of counts against shares.
func pearson(counts []int, shares []float64) float64 {
	total := 0
	for _, c := range counts {
		total += c
	}
	x := 0.0
	for i, c := range counts {
		e := shares[i] * float64(total)
		x += (float64(c) - e) * (float64(c) - e) / e
	}
	return x
}

// chiSquareP is the chi-square distribution's survival function: the
// probability that a chi-square of df degrees of freedom is at least x,
// the regularized upper incomplete gamma function Q(df/2, x/2).
func chiSquareP(x float64, df int) float64 { return upperGamma(float64(df)/2, x/2) }

// upperGamma is Q(a, x) = Γ(a, x)/Γ(a): by P's series below a+1, by Q's
// continued fraction (modified Lentz) above (Numerical Recipes, 6.2).
func upperGamma(a, x float64) float64 {
	if x <= 0 {
		return 1
	}
	lg, _ := math.Lgamma(a)
	front := math.Exp(-x + a*math.Log(x) - lg)
	if x < a+1 {
		term := 1 / a
		sum := term
		for n := 1; n < 10_000; n++ {
			term *= x / (a + float64(n))
			sum += term
			if term < sum*1e-16 {
				break
			}
		}
		return max(0, 1-front*sum)
	}
	const tiny = 1e-300
	b := x + 1 - a
	c, d := 1/tiny, 1/b
	h := d
	for i := 1; i < 10_000; i++ {
		an := -float64(i) * (float64(i) - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = b + an/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 1e-16 {
			break
		}
	}
	return front * h
}

// TestChiSquareP: the survival function gives the closed forms of 2 and 4
// degrees of freedom (e^(-x/2), e^(-x/2)(1 + x/2)) on both sides of its
// switch from series to continued fraction, and the tables' critical values.
func TestChiSquareP(t *testing.T) {
	for _, x := range []float64{0.1, 1, 2.5, 3, 5, 9.21034, 20, 60} {
		if got, want := chiSquareP(x, 2), math.Exp(-x/2); math.Abs(got-want) > 1e-12*max(1, want) {
			t.Errorf("df 2, x %g: %.15g, want %.15g", x, got, want)
		}
		if got, want := chiSquareP(x, 4), math.Exp(-x/2)*(1+x/2); math.Abs(got-want) > 1e-12*max(1, want) {
			t.Errorf("df 4, x %g: %.15g, want %.15g", x, got, want)
		}
	}
	for _, c := range []struct {
		x  float64
		df int
		p  float64
	}{
		{3.841459, 1, 0.05}, {6.634897, 1, 0.01}, {16.918978, 9, 0.05}, {21.665994, 9, 0.01},
		{4.168159, 9, 0.90}, {11.650910, 19, 0.90}, {30.143527, 19, 0.05}, {36.190869, 19, 0.01},
	} {
		if got := chiSquareP(c.x, c.df); math.Abs(got-c.p) > 1e-6 {
			t.Errorf("df %d, x %g: %.8f, want %g", c.df, c.x, got, c.p)
		}
	}
	if chiSquareP(0, 5) != 1 || chiSquareP(1e4, 19) > 1e-300 {
		t.Error("the tails are not 1 and 0")
	}
}

// TestGrinderRoot: the grinder's root is Root's for a leaf inserted at the
// start, the end and anywhere between, on sizes around powers of two.
func TestGrinderRoot(t *testing.T) {
	rng := rand.New(rand.NewPCG(59, 1))
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 100, 255, 256, 257, 1000} {
		base := make([]Hash, n)
		for i := range base {
			base[i] = randomHash(rng)
		}
		Sort(base)
		g := newGrinder(base)
		extra := []Hash{{}, {0xff, 0xff, 0xff, 0xff}}
		for range 20 {
			extra = append(extra, randomHash(rng))
		}
		for _, v := range extra {
			leaves := slices.Clone(base)
			at, _ := slices.BinarySearchFunc(leaves, v, compareHash)
			leaves = slices.Insert(leaves, at, v)
			if got, want := g.root(v), Root(leaves); got != want {
				t.Fatalf("%d leaves, inserted at %d: %s, want %s", n, at, got, want)
			}
		}
	}
}
