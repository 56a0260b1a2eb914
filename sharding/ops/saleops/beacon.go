package saleops

import (
	"context"
	"flashsale/sharding/draw"
	"fmt"
	"io"
	"strings"
	"time"

	"flashsale/sharding/draw/beacon"
	"flashsale/sharding/ops/tool"
)

// BeaconHanded is the report of `sale draw beacon`.
type BeaconHanded struct {
	Sale      int64  `json:"sale"`
	Chain     string `json:"chain"`
	Round     uint64 `json:"round"`
	Signature string `json:"signature"`
	// Recorded: this signature is now the one the gateways use; false when
	// another was recorded first (Held), which the gateways verify alike.
	Recorded bool   `json:"recorded"`
	Held     string `json:"held,omitempty"`
}

// HandBeacon records the beacon round of sale id's draw for the gateways:
// sig (hex) when given, else the round fetched by f, verified in both cases
// against the sale's pinned chain before anything is written.
func HandBeacon(ctx context.Context, t *tool.Tool, id int64, sig string, f beacon.Source) (*BeaconHanded, error) {
	s, err := t.Store.LoadSale(ctx, id)
	if err != nil {
		return nil, err
	}
	d := s.Draw
	if d == nil || d.Round == 0 {
		return nil, fmt.Errorf("sale %d's draw is not sealed by a beacon round (created without one): there is nothing to hand it", id)
	}
	c, err := beacon.ByHash(d.Chain)
	if err != nil {
		return nil, err
	}
	var b []byte
	if sig != "" {
		if b, err = beacon.ParseSignature(sig); err == nil {
			err = c.Verify(d.Round, b)
		}
		if err != nil {
			return nil, fmt.Errorf("sale %d, %s round %d: %w: refused, nothing recorded", id, c.Name, d.Round, err)
		}
	} else if b, err = f.Round(ctx, c, d.Round); err != nil {
		return nil, fmt.Errorf("sale %d, %s round %d: %w", id, c.Name, d.Round, err)
	}
	held, err := t.Store.PutDrawBeacon(ctx, id, b, s.EndsAt.Add(time.Hour))
	if err != nil {
		return nil, err
	}
	rep := &BeaconHanded{Sale: id, Chain: c.Name, Round: d.Round, Signature: fmt.Sprintf("%x", b), Recorded: held == fmt.Sprintf("%x", b)}
	if !rep.Recorded {
		rep.Held = held
	}
	return rep, nil
}

// Text renders the report.
func (r *BeaconHanded) Text(w io.Writer) error {
	if r.Recorded {
		_, err := fmt.Fprintf(w, "sale %d: %s round %d verified and recorded; the gateways reveal the draw on their next tick\n", r.Sale, r.Chain, r.Round)
		return err
	}
	_, err := fmt.Fprintf(w, "sale %d: %s round %d verified; a signature was recorded before (%.16s…), and the gateways verify it alike\n", r.Sale, r.Chain, r.Round, r.Held)
	return err
}

// DrawAborted is the report of `sale draw abort`.
type DrawAborted struct {
	Sale    int64  `json:"sale"`
	Reason  string `json:"reason"`
	Entries int    `json:"entries"` // in the log, the abort included
}

// AbortDraw appends an abort of sale id's draw, with its reason, to the
// draw's log: a redraw after it is one in the open, which every checker
// reports; without it, a second beacon or reveal fails them all. It does not
// stop the sale (sale pause does).
func AbortDraw(ctx context.Context, t *tool.Tool, id int64, reason string) (*DrawAborted, error) {
	reason = strings.TrimSpace(reason)
	if reason == "" || len(reason) > 500 {
		return nil, tool.Usagef("sale draw abort: --reason: say why in 1 to 500 characters; it is published")
	}
	s, err := t.Store.LoadSale(ctx, id)
	if err != nil {
		return nil, err
	}
	if s.Draw == nil {
		return nil, fmt.Errorf("sale %d has no draw to abort", id)
	}
	var log []draw.Entry
	for appended := false; !appended; { // a gateway may log a step meanwhile: again after it
		if log, appended, err = t.Store.LogDrawEvent(ctx, id, &draw.Event{Event: draw.EventAbort, At: time.Now().UnixMilli(), Reason: reason}, s.EndsAt.Add(25*time.Hour)); err != nil {
			return nil, err
		}
	}
	return &DrawAborted{Sale: id, Reason: reason, Entries: len(log)}, nil
}

// Text renders the report.
func (r *DrawAborted) Text(w io.Writer) error {
	_, err := fmt.Fprintf(w, "sale %d: the draw's abort is entry %d of its log (%q); pause the sale if it must stop selling\n", r.Sale, r.Entries, r.Reason)
	return err
}
