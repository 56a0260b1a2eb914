package room

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/draw"
	"flashsale/sharding/stock"
)

// A sealed draw (package draw; SPEC "Fair access") as this package runs it,
// beside the freeze and the reveal of drawn.go:
//
//   - At the freeze each gateway signs the tree head (sale, count, root,
//     the freeze's time, chain, round) with the sale's head key, read once
//     from Redis; every gateway signs the same bytes, and Ed25519 signs
//     deterministically, so all serve the same head.
//   - From the round's time, a gateway whose draw is frozen but has no
//     round asks its beacon source (drand's relays, or the dev chain),
//     at most once a second, verifies the round and hands it to
//     room_freeze.lua, which records the first one; `flashctl sale draw
//     beacon` records one the same way. Every gateway verifies the round it
//     reads back before using it, and the script reveals the seed only once
//     a round is recorded: until then entrants are told they wait for the
//     draw.
//   - Each step is logged (the draw's log): every gateway that sees a step
//     done and not in the log appends it, and draw_log.lua keeps the first.

// BeaconStats are what a gateway's metrics read of the sealed draws.
type BeaconStats struct {
	// Refused counts rounds refused: a relay's, or one recorded in Redis,
	// whose signature is not the chain's.
	Refused atomic.Int64
	// Overdue is the sales whose draw is frozen and still has no verified
	// round BeaconGrace after the round's time.
	Overdue atomic.Int64
}

// BeaconGrace is how late a round may come before its draw counts as
// overdue (drand publishes on time; a relay outage or a round refused is
// what makes it late).
const BeaconGrace = 10 * time.Second

// beaconAskEvery bounds how often a gateway asks for a round not yet out.
const beaconAskEvery = time.Second

// logReadEvery is how often a gateway reads back a log that holds every
// step it knows of (to serve an abort an operator appended).
const logReadEvery = 5 * time.Second

// beaconDue returns the signature (hex) of s's round for room_freeze.lua
// when this gateway should offer one: s is sealed, frozen (prev), without a
// recorded round, and the round's time has come. asked reports whether the
// source was asked.
func (r *Room) beaconDue(ctx context.Context, s *Sale, prev *Frozen) (sig string, asked bool) {
	now := time.Now()
	if !s.Sealed() || prev == nil || prev.Beacon != nil || now.Before(s.Chain.TimeOf(s.Round)) || now.Sub(prev.beaconAsked) < beaconAskEvery {
		return "", false
	}
	b, err := r.cfg.Beacon.Round(ctx, s.Chain, s.Round)
	if err != nil {
		r.cfg.Log.Warn("the draw waits for its beacon round", "sale", s.ID, "chain", s.Chain.Name, "round", s.Round, "err", err)
		return "", true
	}
	return hex.EncodeToString(b), true
}

// seal fills f's tree head and beacon round: the head signed now (or kept
// from prev), the round recorded in Redis verified against s's chain. A
// recorded round that does not verify is an error: no place is computed
// from it.
func (r *Room) seal(ctx context.Context, s *Sale, prev, f *Frozen, recorded []byte) error {
	if !s.Sealed() {
		return nil
	}
	if prev != nil && prev.Head != nil && prev.Head.Root == f.Root && prev.Head.Count == f.Count {
		f.Head, f.HeadSig = prev.Head, prev.HeadSig
	} else if err := r.signHead(ctx, s, f); err != nil {
		// The draw goes on; its entrants get no signed head to keep, and
		// the log no freeze entry, which every checker then points out.
		r.cfg.Log.Error("signing the draw's tree head", "sale", s.ID, "err", err)
	}
	if recorded == nil {
		return nil
	}
	if err := s.Chain.Verify(s.Round, recorded); err != nil {
		if prev == nil || !bytes.Equal(prev.refusedSig, recorded) {
			r.Beacons.Refused.Add(1) // once per recorded round, not per tick
		}
		f.refusedSig = recorded
		return fmt.Errorf("draw of sale %d: the beacon round recorded in Redis (%s field beacon) does not verify: %w; "+
			"no place is drawn from it: delete the field, then hand the round with flashctl sale draw beacon", s.ID, sharding.RoomStateKey(s.ID), err)
	}
	f.Beacon = &draw.Beacon{Chain: s.Chain.Hash, Round: s.Round, Signature: recorded}
	return nil
}

// signHead signs f's tree head with s's head key from Redis.
func (r *Room) signHead(ctx context.Context, s *Sale, f *Frozen) error {
	key, err := stock.New(r.c).DrawHeadKey(ctx, s.ID)
	if err != nil {
		return err
	}
	if pub := hex.EncodeToString(key.Public().(ed25519.PublicKey)); pub != s.HeadKey {
		return fmt.Errorf("the head key in Redis is %s, the sale publishes %s", pub, s.HeadKey)
	}
	h := &draw.Head{Sale: s.ID, Count: f.Count, Root: f.Root, FrozenAt: f.FrozenAt, Chain: s.Chain.Hash, Round: s.Round}
	sig, err := draw.SignHead(key, h)
	if err != nil {
		return err
	}
	f.Head, f.HeadSig = h, sig
	return nil
}

// syncLog appends to s's draw log the steps f has done that it lacks, in
// order, and keeps the log in f. A sale whose log does not open with its
// commitment (created before the log) gets none.
func (r *Room) syncLog(ctx context.Context, s *Sale, f *Frozen) {
	if !r.logDue(s, f, time.Now()) {
		return
	}

	st := stock.New(r.c)
	expire := s.End.Add(25 * time.Hour)
	log, err := st.DrawLog(ctx, s.ID)
	for err == nil && len(log) > 0 {
		var ls *draw.LogState
		if ls, err = draw.CheckLog(s.ID, log); err != nil {
			break
		}
		f.Log, f.logState, f.logRead = log, ls, time.Now()
		e := nextEvent(s, f, ls)
		if e == nil {
			return
		}
		log, _, err = st.AppendDrawEvent(ctx, s.ID, log, e, expire)
	}
	if err != nil {
		r.cfg.Log.Error("the draw's log", "sale", s.ID, "err", err)
	}
}

// logDue reports whether f's log should be read (and appended to): it
// lacks a step f has done, or was read logReadEvery ago. A sale without a
// commitment has no log, and a sealed one logs its freeze with its head.
func (r *Room) logDue(s *Sale, f *Frozen, now time.Time) bool {
	if s.Commitment == nil || (s.Sealed() && f.Head == nil) {
		return false
	}
	want := 2 // commitment, freeze
	if f.Beacon != nil {
		want++
	}
	if f.Revealed {
		want++
	}
	return len(f.Log) < want || now.Sub(f.logRead) >= logReadEvery
}

// waitsForItsRound reports whether f, s's frozen draw, has nothing to do
// before its round's time: signed, logged, and no round can exist yet. The
// freeze is then not called each tick (nor the log read) until the round is
// due.
func (f *Frozen) waitsForItsRound(s *Sale, now time.Time) bool {
	return f != nil && !f.Revealed && s.Sealed() && f.Head != nil && now.Before(s.Chain.TimeOf(s.Round)) &&
		(s.Commitment == nil || (f.logState != nil && f.logState.Freeze != nil))
}

// clone returns a copy of f to change the log of: what it shares with f
// never changes.
func (f *Frozen) clone() *Frozen {
	c := *f
	return &c
}

// nextEvent is the first step f has done that ls lacks, or nil. Every
// field is the same on every gateway, its time included (the freeze's, the
// round's, and the earliest the seed could be revealed): a step logged
// again after a failover lost it is the same entry, with the same hash.
func nextEvent(s *Sale, f *Frozen, ls *draw.LogState) *draw.Event {
	switch {
	case ls.Freeze == nil:
		n := f.Count
		e := &draw.Event{Event: draw.EventFreeze, At: f.FrozenAt.UnixMilli(), Root: f.Root.String(), Count: &n, FrozenAt: f.FrozenAt.UnixMilli()}
		if f.HeadSig != nil {
			e.HeadSig = hex.EncodeToString(f.HeadSig)
		}
		return e
	case f.Beacon != nil && ls.Beacon == nil:
		at := s.Chain.TimeOf(f.Beacon.Round).UnixMilli()
		return &draw.Event{Event: draw.EventBeacon, At: at, Round: f.Beacon.Round, Signature: hex.EncodeToString(f.Beacon.Signature)}
	case f.Revealed && ls.Reveal == nil:
		at := f.FrozenAt.Add(RevealDelay)
		if s.Sealed() && s.Chain.TimeOf(s.Round).After(at) {
			at = s.Chain.TimeOf(s.Round)
		}
		return &draw.Event{Event: draw.EventReveal, At: at.UnixMilli(), Seed: f.Seed.String()}
	}
	return nil
}
