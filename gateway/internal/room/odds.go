package room

import "math"

// Odds returns the chance that a unit is still there when place pl of sale
// s is admitted, in admission state st with remaining units left (SPEC
// "Fair access": honest odds), or -1 when remaining is not known (-1). It
// allocates nothing.
//
// The rule, written down:
//   - A raffle: with A places admitted, U units unsold and N units in
//     unpaid orders (which may still expire or be cancelled), the places
//     that can still be reached are counted as A + U + N, one per unit. At
//     the reveal A is 0 and U + N is the sale's Units, and the raffle keeps
//     that word: it never admits a place past Units. So every place past
//     Units is told NOT_SELECTED at the reveal, which is as soon as it is
//     certain, and each selected place is sure of a unit (1): Units
//     selected places, one order each. The price, kept to honour the word
//     to the others: a unit a selected entrant leaves unbought stays
//     unsold.
//   - In a queue, the places ahead of pl that have not bought yet are
//     k = pl - 1 - sold (sold = units held by orders now); each of them buys
//     with the conversion seen so far, c = sold / admitted places (0.99
//     until 20 places were admitted, clamped to [0.05, 0.99]). The chance is
//     P(fewer than remaining of the k buy), by the normal approximation of
//     the binomial with continuity correction. It falls with the place.
//   - Only a certain answer is 0 (SOLD_OUT, NOT_SELECTED); an estimate is
//     at least MinChance.
func Odds(s *Sale, st *State, pl, remaining int64) float64 {
	if s.Raffle {
		if pl <= s.Units {
			return 1
		}
		return 0
	}
	switch {
	case remaining < 0:
		return -1 // the stock not read yet: no estimate
	case remaining == 0:
		return 0
	}
	sold := max(s.Units-remaining, 0)
	k := float64(pl - 1 - sold)
	if k <= 0 {
		return 1
	}
	c := 0.99
	if st.Cursor >= 20 {
		c = min(max(float64(sold)/float64(st.Cursor), 0.05), 0.99)
	}
	mu, sigma := k*c, math.Sqrt(k*c*(1-c))
	z := (float64(remaining) - 0.5 - mu) / sigma
	return min(max(0.5*math.Erfc(-z/math.Sqrt2), MinChance), 1)
}

// MinChance is the least chance an estimate shows: 0 is kept for what is
// certain.
const MinChance = 0.001
