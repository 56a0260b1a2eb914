package drawverify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	shared "flashsale/sharding/config"

	"flashsale/sharding/draw"
	"flashsale/sharding/ops/tool"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

// DrawVerified is the report of `sale draw verify`.
type DrawVerified struct {
	Sale   int64  `json:"sale"`
	Source string `json:"source"` // the gateway's URL or the file read
	Access string `json:"access"`
	State  string `json:"state"`
	// Verified: the draw checks out; else Reason says the first thing that
	// does not.
	Verified   bool   `json:"verified"`
	Reason     string `json:"reason,omitempty"`
	Count      int    `json:"count"`
	Root       string `json:"root"`
	Seed       string `json:"seed"`
	Commitment string `json:"commitment"` // "" when the sale published none
	Committed  bool   `json:"committed"`  // the gateway's word: the seed is the one written at creation
	FrozenAt   string `json:"frozenAt,omitempty"`
	// Described is "matches" when the commitment is the one in the sale's
	// description in Redis, else why it was not compared.
	Described string `json:"DescribedCommitment"`
	// Sealed says whether a beacon round seals the draw, and which; Log
	// whether the draw's log was checked.
	Sealed string `json:"sealed"`
	Log    string `json:"log"`
	// Address is the revealed draw's address (draw.ID), checked against
	// what it serves; "" when the draw read names none.
	Address string `json:"address,omitempty"`
}

// CheckDraw verifies doc, the whole published draw of sale id, with
// draw.Verify, and what seals it: the beacon round, the tree head and, with
// log (nil: not read), the draw's log. A draw of another sale, or one not
// revealed yet (ErrNotRevealed), is an error; otherwise the report says
// whether it verifies and, when not, why.
func CheckDraw(doc *DrawPage, log *LogPage, id int64) (*DrawVerified, error) {
	if doc.SaleID != id {
		return nil, fmt.Errorf("the draw read is of sale %d, not of sale %d", doc.SaleID, id)
	}
	if doc.State != DrawRevealed {
		return nil, notRevealed(doc)
	}
	rep := &DrawVerified{Sale: id, Access: doc.Access, State: doc.State, Count: doc.Count, Root: doc.Root, Seed: doc.Seed,
		Committed: doc.Committed != nil && *doc.Committed, FrozenAt: doc.FrozenAt}
	if doc.Commitment == nil {
		rep.Reason = "the sale published no commitment to its seed (created without one): nothing shows the seed, drawn at the freeze, was not chosen"
		return rep, nil
	}
	rep.Commitment = *doc.Commitment
	pub, err := publishedOf(doc)
	if err != nil {
		rep.Reason = "the published draw is malformed: " + err.Error()
		return rep, nil
	}
	if pub.Beacon, err = checkBeacon(doc, rep); err != nil {
		rep.Reason = err.Error()
		return rep, nil
	}
	if err := draw.Verify(pub); err != nil {
		rep.Reason = err.Error()
		if !rep.Committed {
			rep.Reason += " (the gateway itself says the revealed seed is not the one written at the sale's creation)"
		}
		return rep, nil
	}
	if doc.ID != "" {
		frozen, err := time.Parse(time.RFC3339Nano, doc.FrozenAt)
		if addr := draw.ID(id, frozen, pub).String(); err != nil || doc.ID != addr {
			rep.Reason = fmt.Sprintf("the draw is served under the address %s, but what it serves (frozen at %q) hashes to %s (draw id): its pages could change under one address", doc.ID, doc.FrozenAt, addr)
			return rep, nil
		}
		rep.Address = doc.ID
	}
	if err := checkWitness(doc, log, rep); err != nil {
		rep.Reason = err.Error()
		return rep, nil
	}
	rep.Verified = true
	return rep, nil
}

// notRevealed says why doc, a draw not revealed, cannot be verified yet.
func notRevealed(doc *DrawPage) error {
	switch doc.State {
	case DrawOpen:
		return fmt.Errorf("sale %d: %w: its entries are open (state %s, %d entrants so far); verify it once the seed is revealed, moments after the entries close",
			doc.SaleID, ErrNotRevealed, doc.State, doc.Count)
	case DrawFrozen:
		return fmt.Errorf("sale %d: %w: its %d entrants are frozen under root %s since %s (state %s), the seed comes moments later; verify again",
			doc.SaleID, ErrNotRevealed, doc.Count, doc.Root, doc.FrozenAt, doc.State)
	}
	return fmt.Errorf("sale %d: %w: the draw's state is %q, want %s", doc.SaleID, ErrNotRevealed, doc.State, DrawRevealed)
}

// compareDescription compares the commitment served with the one in s, the
// sale's description as LoadSale (with err) found it in Redis; a difference
// fails the check.
func (r *DrawVerified) compareDescription(s *sale.Sale, err error) {
	var why string
	switch {
	case errors.Is(err, stock.ErrNoSale):
		r.Described = fmt.Sprintf("not compared: sale %d is not in this Redis", r.Sale)
		return
	case err != nil:
		r.Described = "not compared: " + err.Error()
		return
	case r.Commitment == "":
		r.Described = "not compared: the draw names no commitment"
		return
	case s.Draw == nil:
		why = fmt.Sprintf("the draw names commitment %s, the sale's description in Redis names none", r.Commitment)
	case s.Draw.Commitment != r.Commitment:
		why = fmt.Sprintf("the draw names commitment %s, the sale's description in Redis %s", r.Commitment, s.Draw.Commitment)
	default:
		r.Described = "matches"
		return
	}
	r.Described, r.Verified = "differs", false
	if r.Reason == "" {
		r.Reason = why
	} else {
		r.Reason += "; and " + why
	}
}

// Text renders the report.
func (r *DrawVerified) Text(w io.Writer) error {
	if r.Verified {
		fmt.Fprintf(w, "draw of sale %d verifies: %d entrants, root %s, seed %s (commitment %s)\n", r.Sale, r.Count, r.Root, r.Seed, r.Commitment)
	} else {
		fmt.Fprintf(w, "draw of sale %d does NOT verify: %s\n", r.Sale, r.Reason)
		fmt.Fprintf(w, "as published: %d entrants, root %s, seed %s, commitment %s\n", r.Count, r.Root, r.Seed, r.Commitment)
	}
	if r.Sealed != "" {
		fmt.Fprintf(w, "sealed by a beacon: %s\n", r.Sealed)
	}
	if r.Log != "" {
		fmt.Fprintf(w, "log: %s\n", r.Log)
	}
	if r.Address != "" {
		fmt.Fprintf(w, "address: %s, the hash of what it serves (its pages are immutable under it)\n", r.Address)
	}
	desc := "the same as in the sale's description in Redis"
	if r.Described != "matches" {
		desc = r.Described
	}
	_, err := fmt.Fprintf(w, "read from %s; commitment: %s\n", r.Source, desc)
	return err
}

// DescribedCommitment compares rep's commitment with the sale's description
// in the Redis r names, when it can be reached.
func DescribedCommitment(ctx context.Context, r shared.Redis, rep *DrawVerified) {
	c, err := tool.DialRedis(r)
	if err != nil {
		rep.Described = "not compared: " + err.Error()
		return
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := stock.New(c).LoadSale(ctx, rep.Sale)
	rep.compareDescription(s, err)
}
