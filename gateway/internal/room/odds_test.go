package room

import "testing"

// TestOddsFallWithThePlace: within one state the chance never rises with the
// place, is 1 for the places the remaining units cover, is never 0 as an
// estimate, and is unknown (-1) while the stock is not read.
func TestOddsFallWithThePlace(t *testing.T) {
	s := &Sale{Units: 500}
	for _, st := range []*State{{Cursor: 0}, {Cursor: 300}, {Cursor: 450}} {
		for _, rem := range []int64{500, 200, 37, 1} {
			last := 2.0
			for pl := int64(1); pl <= 3000; pl++ {
				c := Odds(s, st, pl, rem)
				if c > last || c < MinChance || c > 1 {
					t.Fatalf("cursor %d, %d left: place %d has chance %v after %v", st.Cursor, rem, pl, c, last)
				}
				if sold := s.Units - rem; pl <= sold+1 && c != 1 {
					t.Fatalf("cursor %d, %d left: place %d (nobody unserved ahead) has chance %v", st.Cursor, rem, pl, c)
				}
				last = c
			}
		}
	}
	if c := Odds(s, &State{}, 10, -1); c != -1 {
		t.Fatalf("unknown stock: chance %v", c)
	}
	if c := Odds(s, &State{}, 10, 0); c != 0 {
		t.Fatalf("no stock: chance %v", c)
	}
	r := &Sale{Units: 100, Raffle: true}
	if Odds(r, &State{}, 100, 3) != 1 || Odds(r, &State{}, 101, 3) != 0 {
		t.Fatal("a raffle's winners are sure of a unit, the others have none")
	}
}
