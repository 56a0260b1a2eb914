package draw

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"flashsale/sharding/draw/beacon"
)

// sealedLog writes the log of a sale drawn on the dev chain, as the
// operator's tool and the gateways write it, and returns its events.
func sealedLog(t *testing.T, sale int64, close time.Time) []*Event {
	t.Helper()
	c := beacon.Dev
	r := c.RoundFor(close)
	sig, err := c.Sign(r)
	if err != nil {
		t.Fatal(err)
	}
	n := 3
	return []*Event{
		{Event: EventCommit, Commitment: Commitment(Hash{1}).String(), Chain: c.Hash, Round: r, HeadKey: strings.Repeat("ab", 32)},
		{Event: EventFreeze, Root: Hash{2}.String(), Count: &n, FrozenAt: close.Add(200 * time.Millisecond).UnixMilli(), HeadSig: "00"},
		{Event: EventBeacon, Round: r, Signature: hex.EncodeToString(sig)},
		{Event: EventReveal, Seed: Hash{1}.String()},
	}
}

func chain(t *testing.T, sale int64, evs []*Event) []Entry {
	t.Helper()
	var out []Entry
	var prev Hash
	for i, e := range evs {
		e.Seq, e.Sale = i, sale
		en, err := NewEntry(prev, e)
		if err != nil {
			t.Fatal(err)
		}
		out, prev = append(out, en), en.Hash
	}
	return out
}

// TestLogRefusesEachMutant: the log of a sealed draw checks, and each
// mutant is refused with its reason: a second freeze, a redraw without an
// abort, an entry changed after the fact, a freeze dated after the round,
// a reveal before the beacon. A redraw after an abort passes, its reason
// reported.
func TestLogRefusesEachMutant(t *testing.T) {
	close := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	const sale = 9
	st, err := CheckLog(sale, chain(t, sale, sealedLog(t, sale, close)))
	if err != nil || st.Reveal == nil || st.Beacon == nil || len(st.Aborts) != 0 {
		t.Fatalf("the sealed log: %v, %+v", err, st)
	}
	for _, m := range []struct {
		name, reason string
		mutate       func([]*Event) []*Event
	}{
		{"second freeze", "a second freeze", func(e []*Event) []*Event {
			f := *e[1]
			return append(e[:2:2], &f, e[2], e[3])
		}},
		{"second freeze after an abort", "a second freeze", func(e []*Event) []*Event {
			f := *e[1]
			return append(e[:2:2], &Event{Event: EventAbort, Reason: "entrants again"}, &f)
		}},
		{"redraw without an abort", "a second reveal without an abort", func(e []*Event) []*Event {
			return append(e, &Event{Event: EventReveal, Seed: Hash{3}.String()})
		}},
		{"second beacon without an abort", "a second beacon without an abort", func(e []*Event) []*Event {
			b := *e[2]
			return append(e[:3:3], &b, e[3])
		}},
		{"freeze dated after the round", "not before round", func(e []*Event) []*Event {
			c, _ := beacon.ByHash(e[0].Chain)
			e[1].FrozenAt = c.TimeOf(e[0].Round).UnixMilli()
			return e
		}},
		{"reveal before the beacon", "a reveal before the beacon", func(e []*Event) []*Event {
			return append(e[:2:2], e[3])
		}},
		{"beacon of another round", "the sale committed to round", func(e []*Event) []*Event {
			e[2].Round++
			return e
		}},
		{"no commitment first", "does not start with the commitment", func(e []*Event) []*Event { return e[1:] }},
	} {
		entries := chain(t, sale, m.mutate(sealedLog(t, sale, close)))
		_, err := CheckLog(sale, entries)
		if !errors.Is(err, ErrLog) || !strings.Contains(err.Error(), m.reason) {
			t.Errorf("%s: %v, want ErrLog saying %q", m.name, err, m.reason)
		}
	}
	// An entry changed in place, its hash left: the chain breaks there.
	entries := chain(t, sale, sealedLog(t, sale, close))
	entries[1].Body = []byte(strings.Replace(string(entries[1].Body), `"count":3`, `"count":4`, 1))
	if _, err := CheckLog(sale, entries); err == nil || !strings.Contains(err.Error(), "entry 1's hash") {
		t.Errorf("a changed entry: %v", err)
	}
	// A redraw in the open: abort, then beacon and reveal again.
	evs := sealedLog(t, sale, close)
	evs = append(evs, &Event{Event: EventAbort, Reason: "the seed leaked"}, &Event{Event: EventBeacon, Round: evs[2].Round, Signature: evs[2].Signature},
		&Event{Event: EventReveal, Seed: Hash{4}.String()})
	if st, err := CheckLog(sale, chain(t, sale, evs)); err != nil || len(st.Aborts) != 1 || st.Reveal.Seed != (Hash{4}).String() {
		t.Fatalf("a redraw after an abort: %v, %+v", err, st)
	}
	// Another sale's log.
	if _, err := CheckLog(sale+1, chain(t, sale, sealedLog(t, sale, close))); err == nil {
		t.Fatal("a log checked as another sale's")
	}
}

// TestHeadRefusesForgeriesAndLateHeads: a tree head verifies under its key
// before the round's time; a head dated at the round's time, one signed by
// another key, and one with a changed root are refused.
func TestHeadRefusesForgeriesAndLateHeads(t *testing.T) {
	key := NewHeadKey()
	pub := key.Public().(ed25519.PublicKey)
	c := beacon.Dev
	close := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	h := Head{Sale: 5, Count: 10, Root: Hash{7}, FrozenAt: close.Add(200 * time.Millisecond), Chain: c.Hash, Round: c.RoundFor(close)}
	sig, err := SignHead(key, &h)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyHead(pub, &h, sig); err != nil {
		t.Fatalf("a good head: %v", err)
	}
	late := h
	late.FrozenAt = c.TimeOf(h.Round)
	lateSig, _ := SignHead(key, &late)
	if err := VerifyHead(pub, &late, lateSig); !errors.Is(err, ErrHead) || !strings.Contains(err.Error(), "issued after the beacon") {
		t.Errorf("a head dated at the round's time: %v", err)
	}
	other := NewHeadKey()
	forged, _ := SignHead(other, &h)
	if err := VerifyHead(pub, &h, forged); !errors.Is(err, ErrHead) {
		t.Errorf("a head signed by another key: %v", err)
	}
	moved := h
	moved.Root = Hash{8}
	if err := VerifyHead(pub, &moved, sig); !errors.Is(err, ErrHead) {
		t.Errorf("a head whose root changed: %v", err)
	}
}

// TestForgedBeaconIsRefused: a draw whose beacon signature is not the
// chain's (a forged round) does not verify, nor one naming an unknown chain.
func TestForgedBeaconIsRefused(t *testing.T) {
	seed := Hash{1}
	sig, _ := beacon.Dev.Sign(10)
	if _, err := KeyOf(seed, &Beacon{Chain: beacon.Dev.Hash, Round: 10, Signature: sig}); err != nil {
		t.Fatalf("a real dev round: %v", err)
	}
	forged := append([]byte(nil), sig...)
	other, _ := beacon.Dev.Sign(11)
	copy(forged, other)
	if _, err := KeyOf(seed, &Beacon{Chain: beacon.Dev.Hash, Round: 10, Signature: forged}); !errors.Is(err, beacon.ErrSignature) {
		t.Fatalf("round 11's signature as round 10's: %v", err)
	}
	if _, err := KeyOf(seed, &Beacon{Chain: beacon.ChainHash, Round: 10, Signature: sig}); !errors.Is(err, beacon.ErrSignature) {
		t.Fatalf("a dev signature as quicknet's: %v", err)
	}
	if _, err := KeyOf(seed, &Beacon{Chain: strings.Repeat("0", 64), Round: 10, Signature: sig}); err == nil {
		t.Fatal("an unknown chain")
	}
}
