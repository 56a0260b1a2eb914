package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"flashsale/gateway/internal/pow"
	"flashsale/sharding/sale"
)

// TestProofOfWorkBeforeTheWaitingRoom: a sale with a waiting room and proof
// of work over the real stack: the first ask is 428 with a challenge, bad
// proofs are 403 PROOF_INVALID, a solved one joins the waiting room, and
// polls with the pass need no proof.
func TestProofOfWorkBeforeTheWaitingRoom(t *testing.T) {
	s := start(t, 5, 1, nil, "")
	sl := *s.sale
	sl.Version, sl.TicketRequired = sl.Version+1, true
	sl.WaitingRoom, sl.PowDifficulty = &sale.Room{StartWindow: sale.Duration(200 * time.Millisecond)}, 10
	if err := s.store.StoreSale(context.Background(), &sl); err != nil {
		t.Fatal(err)
	}
	if err := s.app.Catalog.Refresh(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	s.sale = &sl
	tok, other := token(t, 9001), token(t, 9002)
	challenge := func(tok string) (string, int) {
		a := s.askTicket(s.app, tok, "", false)
		var v struct {
			Error      string
			Challenge  string
			Difficulty int
		}
		if err := json.Unmarshal([]byte(a.body), &v); a.code != 428 || err != nil || v.Error != "PROOF_REQUIRED" || v.Difficulty != 10 {
			t.Fatalf("first ask: %+v", a)
		}
		return v.Challenge, v.Difficulty
	}
	c, d := challenge(tok)
	_, proof := pow.Solve([]byte(c), d)
	oc, _ := challenge(other)
	_, otherProof := pow.Solve([]byte(oc), d)
	for name, p := range map[string]string{"malformed": "abc:1", "another user's": string(otherProof), "unsolved": weakProof(c, d)} {
		if a := s.askTicket(s.app, tok, "", false, "X-Proof", p); a.code != 403 || a.body != `{"error":"PROOF_INVALID"}` {
			t.Fatalf("%s proof: %+v", name, a)
		}
	}
	a := s.askTicket(s.app, tok, "", false, "X-Proof", string(proof))
	if a.code != 202 && a.code != 200 || a.pass == "" {
		t.Fatalf("solved proof: %+v", a)
	}
	for i := 0; i < 30; i++ {
		p := s.askTicket(s.app, tok, a.pass, false)
		if p.code == 200 {
			return
		}
		if p.code != 202 {
			t.Fatalf("poll with the pass: %+v", p)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("not admitted within 3 s with 5 units left")
}

// weakProof returns a proof of c that falls short of d bits.
func weakProof(c string, d int) string {
	for n := 0; ; n++ {
		p := c + ":" + strconv.Itoa(n)
		if sum := sha256.Sum256([]byte(p)); pow.LeadingZeros(&sum) < d {
			return p
		}
	}
}
