package saleops

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"flashsale/sharding/draw/beacon"
	"strings"
	"testing"
	"time"

	"flashsale/sharding/ops/internal/opstest"
	"flashsale/sharding/ops/tool"
	"flashsale/sharding/sale"
)

// TestNewDrawCommits: a queue or raffle sale gets a fresh seed whose SHA-256
// is its commitment, the first round of its chain at least the chain's lead
// after the entries close, and a head key whose public half it publishes;
// an open sale, or one whose create keeps its stored draw, gets none.
func TestNewDrawCommits(t *testing.T) {
	s, err := ParseSale([]byte(opstest.QueuePresaleYAML), "")
	if err != nil {
		t.Fatal(err)
	}
	sec := NewDraw(s, beacon.Dev)
	b, err := hex.DecodeString(sec.Seed)
	if sum := sha256.Sum256(b); err != nil || len(b) != 32 || s.Draw == nil || s.Draw.Commitment != hex.EncodeToString(sum[:]) {
		t.Fatalf("seed %q, draw %+v: want a 32-byte seed and its SHA-256", sec.Seed, s.Draw)
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("the sale with its commitment: %v", err)
	}
	d, close := s.Draw, s.EntriesClose()
	if at := beacon.Dev.TimeOf(d.Round); d.Chain != beacon.Dev.Hash || at.Before(close.Add(beacon.Dev.Lead)) || at.Sub(close.Add(beacon.Dev.Lead)) >= beacon.Dev.Period {
		t.Fatalf("draw %+v: round at %v for entries closing at %v", d, at, close)
	}
	if pub := hex.EncodeToString(sec.Head.Public().(ed25519.PublicKey)); d.HeadKey != pub {
		t.Fatalf("head key %s published, %s kept", d.HeadKey, pub)
	}
	late := *s
	late.Draw = &sale.DrawCommitment{Commitment: d.Commitment, Chain: d.Chain, Round: d.Round - 1, HeadKey: d.HeadKey}
	if err := late.Validate(); err == nil || !strings.Contains(err.Error(), "after the entries close") {
		t.Fatalf("a round before the lead: %v", err)
	}
	kept := s.Draw
	if again := NewDraw(s, beacon.Dev); again.Seed != "" || again.Head != nil || s.Draw != kept {
		t.Fatal("a sale with its draw got another seed")
	}
	bare, _ := ParseSale([]byte(opstest.QueuePresaleYAML), "")
	if sec2 := NewDraw(bare, nil); sec2.Seed == sec.Seed || sec2.Head != nil || bare.Draw.Round != 0 || bare.Validate() != nil {
		t.Fatalf("a draw on the seed alone: %+v", bare.Draw)
	}
	open, err := ParseSale([]byte(goodYAML), "")
	if err != nil {
		t.Fatal(err)
	}
	if sec := NewDraw(open, beacon.Dev); sec.Seed != "" || open.Draw != nil {
		t.Fatalf("an open sale got seed %q", sec.Seed)
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
