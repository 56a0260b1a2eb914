package saleops

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"flashsale/sharding/ops/internal/opstest"
	"flashsale/sharding/ops/tool"
	"flashsale/sharding/sale"
)

// TestNewDrawCommits: a queue or raffle sale gets a fresh seed whose SHA-256
// is its commitment; an open sale, or one whose create keeps its stored
// draw, gets none.
func TestNewDrawCommits(t *testing.T) {
	s, err := ParseSale([]byte(opstest.QueuePresaleYAML), "")
	if err != nil {
		t.Fatal(err)
	}
	seed := NewDraw(s)
	b, err := hex.DecodeString(seed)
	if sum := sha256.Sum256(b); err != nil || len(b) != 32 || s.Draw == nil || s.Draw.Commitment != hex.EncodeToString(sum[:]) {
		t.Fatalf("seed %q, draw %+v: want a 32-byte seed and its SHA-256", seed, s.Draw)
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("the sale with its commitment: %v", err)
	}
	kept := s.Draw
	if again := NewDraw(s); again != "" || s.Draw != kept {
		t.Fatal("a sale with its draw got another seed")
	}
	if other := NewDraw(s); other == seed {
		t.Fatal("two seeds alike")
	}
	open, err := ParseSale([]byte(goodYAML), "")
	if err != nil {
		t.Fatal(err)
	}
	if seed := NewDraw(open); seed != "" || open.Draw != nil {
		t.Fatalf("an open sale got seed %q", seed)
	}
	if at := tool.AccessExpiry(s); !at.Equal(s.EndsAt.Add(sale.DefaultPaymentWindow + 24*time.Hour)) {
		t.Fatalf("the access keys expire at %v", at)
	}
}

// TestShowAccessText: sale show names the access mode, the raffle window,
// the commitment and the presale with what is left of its cap.
func TestShowAccessText(t *testing.T) {
	left := int64(2)
	r := &SaleShown{Access: sale.AccessRaffle, Commitment: strings.Repeat("c", 64),
		Raffle: &sale.Raffle{EntriesOpen: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), EntriesClose: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)},
		Presale: &PresaleShown{StartsAt: time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC), Claim: "tier", Values: []string{"gold", "silver"},
			List: true, Listed: 40, Cap: 3, CapLeft: &left}}
	var b bytes.Buffer
	r.accessText(&b)
	for _, want := range []string{
		"access raffle, entries 2026-11-30T10:00:00Z .. 2026-12-01T09:00:00Z, draw commitment " + strings.Repeat("c", 64),
		"presale from 2026-12-01T09:30:00Z: claim tier in [gold, silver]; list yes (40 users loaded); cap 3, left 2",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in:\n%s", want, b.String())
		}
	}
	b.Reset()
	(&SaleShown{Access: sale.AccessQueue}).accessText(&b)
	if !strings.Contains(b.String(), "no draw commitment") {
		t.Errorf("a queue without commitment:\n%s", b.String())
	}
}
