package saleops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"flashsale/sharding"
	"flashsale/sharding/draw/beacon"
	"flashsale/sharding/journal"
	"flashsale/sharding/ops/tool"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
	"flashsale/writer/schema"
)

// CreateSale places s's shards (shards of them; 0 means one per cluster
// master) unless s names them, applies the schema's migrations, then writes
// the sale to PostgreSQL and preloads its stock in Redis, committing
// PostgreSQL only once Redis holds the stock. A queue or raffle sale gets the
// seed of its draw and a presale its cap in Redis with the stock, and s.Draw
// the seed's commitment (see PutAccessKeys); a sale that names its Draw is
// refused. A sale id already known to either store is refused with
// schema.ErrSaleExists, but for the one a create that stopped before
// PostgreSQL's commit left in Redis alone: the same file again finishes that
// one, with its draw, while none of its units was sold.
func CreateSale(ctx context.Context, db *pgxpool.Pool, rs *stock.Store, s *sale.Sale, shards int) error {
	chain, err := DefaultChain()
	if err != nil {
		return err
	}
	return CreateSaleOn(ctx, db, rs, s, shards, chain)
}

// CreateSaleOn is CreateSale with the draw sealed by chain (nil: the seed
// alone).
func CreateSaleOn(ctx context.Context, db *pgxpool.Pool, rs *stock.Store, s *sale.Sale, shards int, chain *beacon.Chain) error {
	if s.Draw != nil {
		return fmt.Errorf("sale %d: %w", s.ID, errDrawInFile)
	}
	if err := schema.Migrate(ctx, db, nil); err != nil {
		return err
	}
	if exists, err := schema.SaleExists(ctx, db, s.ID); err != nil {
		return err
	} else if exists {
		return fmt.Errorf("sale %d: %w in PostgreSQL; pick another id", s.ID, schema.ErrSaleExists)
	}
	resumed := false
	if stored, err := rs.LoadSale(ctx, s.ID); err == nil {
		// A create that stopped between Redis and PostgreSQL's commit (a
		// crash, a lost connection) left the sale in Redis alone: the same
		// file again finishes it, while nothing of it was sold.
		if why := unfinishedCreate(ctx, rs, stored, s, shards); why != "" {
			return fmt.Errorf("sale %d: %w in Redis (not in PostgreSQL), and %s; pick another id", s.ID, schema.ErrSaleExists, why)
		}
		s.Shards, s.Version, s.Draw, resumed = stored.Shards, stored.Version, stored.Draw, true
	} else if !errors.Is(err, stock.ErrNoSale) {
		return err
	}
	if len(s.Shards) == 0 {
		topo, err := stock.Topology(ctx, rs.Client())
		if err != nil {
			return err
		}
		if shards <= 0 {
			shards = len(topo.Masters)
		}
		tags, err := sharding.PlaceTags(s.ID, shards, topo)
		if err != nil {
			return err
		}
		s.Shards = tags
	}
	if s.Version == 0 {
		s.Version = 1
	}
	sec := NewDraw(s, chain)
	if err := s.Validate(); err != nil {
		return err
	}
	return schema.CreateSaleSeeded(ctx, db, s, func(ctx context.Context) (schema.DrawSecrets, error) {
		held, err := PutAccessKeys(ctx, rs, s, sec)
		if err != nil {
			return held, err
		}
		if err := rs.Preload(ctx, s, resumed); err != nil {
			return held, fmt.Errorf("preloading stock in redis: %w", err)
		}
		return held, nil
	})
}

// unfinishedCreate says why stored, a sale found in Redis but not in
// PostgreSQL, is not what an unfinished create of s with shards shards (0:
// any) left: a description other than the file's, or a unit sold. "" when it
// is, and the create may finish it. The stored Draw is the one that create
// drew, which the file never names.
func unfinishedCreate(ctx context.Context, rs *stock.Store, stored, s *sale.Sale, shards int) string {
	a, b := *stored, *s
	a.Shards, a.Version, a.Draw, b.Shards, b.Version, b.Draw = nil, 0, nil, nil, 0, nil
	ja, _ := json.Marshal(&a)
	jb, _ := json.Marshal(&b)
	if !bytes.Equal(ja, jb) || (shards > 0 && shards != len(stored.Shards)) {
		return "its description there differs from this file's"
	}
	if stored.Drawn() {
		// The gateways run a sale's waiting room or raffle from its
		// description in Redis, created or not: a draw frozen meanwhile may
		// have been revealed under a seed nobody saw committed, so the create
		// is not finished.
		switch frozen, err := rs.DrawFrozen(ctx, stored.ID); {
		case err != nil:
			return fmt.Sprintf("its draw's state cannot be read (%v)", err)
		case frozen:
			return "its draw was frozen by the gateways while the create was unfinished"
		}
	}
	for _, it := range stored.Items {
		rem, err := rs.Remaining(ctx, stored, it.ID)
		if err != nil {
			return fmt.Sprintf("its stock there cannot be read (%v)", err)
		}
		if tool.Sum(rem) != it.Quantity {
			return fmt.Sprintf("item %d has %d of its %d units left there", it.ID, tool.Sum(rem), it.Quantity)
		}
	}
	return ""
}

// SaleCreated is the report of `sale create`.
type SaleCreated struct {
	Sale   int64    `json:"sale"`
	Name   string   `json:"name"`
	Items  int      `json:"items"`
	Shards []string `json:"shards"`
	Access string   `json:"access"`
	// Commitment is the SHA-256 of the secret seed of a queue's or
	// raffle's draw (hex), public from now on; "" for an open sale.
	Commitment string `json:"commitment,omitempty"`
	// Beacon is the round that seals the draw, HeadKey the public key of
	// its tree head (hex).
	Beacon  *BeaconShown `json:"beacon,omitempty"`
	HeadKey string       `json:"headKey,omitempty"`
}

// BeaconShown is a draw's beacon round as the reports show it.
type BeaconShown struct {
	Chain string    `json:"chain"` // its name
	Hash  string    `json:"hash"`
	Round uint64    `json:"round"`
	At    time.Time `json:"at"`
}

// Text renders the report.
func (r *SaleCreated) Text(w io.Writer) error {
	_, err := fmt.Fprintf(w, "sale %d %q created: %d items, %d shards %v, access %s\n", r.Sale, r.Name, r.Items, len(r.Shards), r.Shards, r.Access)
	if err == nil && r.Commitment != "" {
		_, err = fmt.Fprintf(w, "draw commitment %s (SHA-256 of the draw's seed, which stays secret in Redis until the draw is revealed; publish it now)\n", r.Commitment)
	}
	if b := r.Beacon; err == nil && b != nil {
		_, err = fmt.Fprintf(w, "draw sealed by %s round %d (published %s), tree heads signed by %s\n", b.Chain, b.Round, b.At.Format(time.RFC3339), r.HeadKey)
	}
	return err
}

// CreateParsedSale creates the sale s read from a sale file (CreateSale).
func CreateParsedSale(ctx context.Context, t *tool.Tool, s *sale.Sale, shards int, chain *beacon.Chain) (*SaleCreated, error) {
	if err := t.NeedDB(); err != nil {
		return nil, err
	}
	if err := CreateSaleOn(ctx, t.DB, t.Store, s, shards, chain); err != nil {
		return nil, err
	}
	rep := &SaleCreated{Sale: s.ID, Name: s.Name, Items: len(s.Items), Shards: s.Shards, Access: s.Mode()}
	if d := s.Draw; d != nil {
		rep.Commitment, rep.HeadKey = d.Commitment, d.HeadKey
		if c, err := beacon.ByHash(d.Chain); err == nil {
			rep.Beacon = &BeaconShown{Chain: c.Name, Hash: c.Hash, Round: d.Round, At: c.TimeOf(d.Round).UTC()}
		}
	}
	return rep, nil
}

// SaleLine is one sale of `sale list`.
type SaleLine struct {
	Sale     int64     `json:"sale"`
	Name     string    `json:"name"`
	Status   string    `json:"status"` // SCHEDULED, ACTIVE, PAUSED, ENDED; "?" when Redis lacks the sale
	StartsAt time.Time `json:"startsAt"`
	EndsAt   time.Time `json:"endsAt"`
	Window   string    `json:"paymentWindow"`
	Shards   int       `json:"shards"`
	Items    int       `json:"items"`
	Quantity int64     `json:"quantity"`
	Sold     int64     `json:"sold"`
}

// SaleList is the report of `sale list`.
type SaleList struct {
	Sales []SaleLine `json:"sales"`
}

// SaleStates are the statuses `sale list` shows (and "?" for a sale Redis
// lacks).
var SaleStates = []string{"SCHEDULED", "ACTIVE", "SOLD_OUT", "PAUSED", "ENDED"}

// ListFilter narrows `sale list`: States (empty: all), then the Last sales
// (0: all).
type ListFilter struct {
	States []string
	Last   int
}

// Parse reads --status (names in any case) and checks --last.
func (f *ListFilter) Parse(status string) error {
	if f.Last < 0 {
		return tool.Usagef("sale list: --last %d: want 0 (all) or more", f.Last)
	}
	for _, v := range strings.Split(status, ",") {
		if v = strings.ToUpper(strings.TrimSpace(v)); v == "" {
			continue
		}
		if !slices.Contains(SaleStates, v) {
			return tool.Usagef("sale list: --status %q: want %s", v, strings.Join(SaleStates, ", "))
		}
		f.States = append(f.States, v)
	}
	return nil
}

func (f *ListFilter) keeps(status string) bool {
	return len(f.States) == 0 || slices.Contains(f.States, status)
}

// ListSales lists the sales in PostgreSQL that f keeps, newest start first,
// with their status from the description in Redis.
func ListSales(ctx context.Context, t *tool.Tool, f ListFilter) (*SaleList, error) {
	if err := t.NeedDB(); err != nil {
		return nil, err
	}
	rows, err := schema.ListSales(ctx, t.DB)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	rep := &SaleList{Sales: []SaleLine{}}
	for _, r := range rows {
		if f.Last > 0 && len(rep.Sales) == f.Last {
			break
		}
		status := "?"
		if s, err := t.Store.LoadSale(ctx, r.ID); err == nil {
			if status = tool.SaleState(s, now); status == "ACTIVE" {
				// As sale show and the public description say it.
				if status, err = activeState(ctx, t, s); err != nil {
					return nil, err
				}
			}
		} else if !errors.Is(err, stock.ErrNoSale) {
			return nil, err
		}
		if !f.keeps(status) {
			continue
		}
		rep.Sales = append(rep.Sales, SaleLine{Sale: r.ID, Name: r.Name, Status: status, StartsAt: r.StartsAt.UTC(), EndsAt: r.EndsAt.UTC(),
			Window: r.Window.String(), Shards: r.Shards, Items: r.Items, Quantity: r.Quantity, Sold: r.Sold})
	}
	return rep, nil
}

// activeState returns SOLD_OUT for an active sale with no unit left in Redis
// on any item, else ACTIVE.
func activeState(ctx context.Context, t *tool.Tool, s *sale.Sale) (string, error) {
	for _, it := range s.Items {
		rem, err := t.Store.Remaining(ctx, s, it.ID)
		if err != nil {
			return "", err
		}
		if tool.Sum(rem) > 0 {
			return "ACTIVE", nil
		}
	}
	return "SOLD_OUT", nil
}

// Text renders the report.
func (r *SaleList) Text(w io.Writer) error {
	tb := tool.NewTable(w, "ID", "NAME", "STATUS", "STARTS", "ENDS", "WINDOW", "SHARDS", "ITEMS", "QUANTITY", "SOLD")
	for _, s := range r.Sales {
		tb.Row(tool.Itoa(s.Sale), s.Name, s.Status, s.StartsAt.Format(time.RFC3339), s.EndsAt.Format(time.RFC3339), s.Window,
			tool.Itoa(int64(s.Shards)), tool.Itoa(int64(s.Items)), tool.Itoa(s.Quantity), tool.Itoa(s.Sold))
	}
	return tb.Flush()
}

// SaleItem is one item of `sale show`.
type SaleItem struct {
	Item     int64            `json:"item"`
	Name     string           `json:"name"`
	Price    int64            `json:"price"`
	Currency string           `json:"currency"`
	Quantity int64            `json:"quantity"`
	Sold     int64            `json:"sold"`
	Orders   map[string]int64 `json:"orders"`   // by status
	Left     int64            `json:"left"`     // units on the Redis shards
	PerShard []int64          `json:"perShard"` // units per shard
	// Drift is Q - (S + M + P + J) in the writer's last reading (see
	// SaleShown.DriftAt); nil when no writer has read the sale lately.
	Drift *int64 `json:"drift,omitempty"`
}

// ShardJournal is one shard's hand-off journal in `sale show`.
type ShardJournal struct {
	Shard   string  `json:"shard"`
	Backlog int64   `json:"backlog"`          // entries Kafka has not acknowledged
	Oldest  float64 `json:"oldestAgeSeconds"` // the oldest entry's age, 0 when empty
}

// SaleShown is the report of `sale show`.
type SaleShown struct {
	Sale     int64          `json:"sale"`
	Name     string         `json:"name"`
	Status   string         `json:"status"`
	State    string         `json:"state"` // the operator's state: "", PAUSED, ENDED
	Version  int64          `json:"version"`
	StartsAt time.Time      `json:"startsAt"`
	EndsAt   time.Time      `json:"endsAt"`
	Window   string         `json:"paymentWindow"`
	Shards   []string       `json:"shards"`
	Halts    []string       `json:"halts"` // each shard's halt key ("" when none)
	Items    []SaleItem     `json:"items"`
	Journals []ShardJournal `json:"journals"`
	// Access is the sale's access mode: open, queue or raffle; Raffle its
	// registration window when a raffle.
	Access string       `json:"access"`
	Raffle *sale.Raffle `json:"raffle,omitempty"`
	// Commitment is the SHA-256 of the seed of the sale's draw (hex); ""
	// for an open sale or one created without a commitment.
	Commitment string        `json:"commitment,omitempty"`
	Presale    *PresaleShown `json:"presale,omitempty"`
	// DriftAt is when the writer took the drift reading the items show
	// (zero when there is none: no writer read the sale in 10 minutes).
	DriftAt time.Time `json:"driftAt,omitzero"`
	// Warnings name what could not be shown (a mangled journal entry or
	// drift reading): the rest of the report is still shown.
	Warnings []string `json:"warnings,omitempty"`
}

// ShowSale reads sale id's description from Redis (status, shards and their
// halt keys, stock left per shard, access mode, draw commitment, presale and
// what is left of its cap) and, with PostgreSQL, its orders by status.
func ShowSale(ctx context.Context, t *tool.Tool, id int64) (*SaleShown, error) {
	s, err := t.LoadSale(ctx, id)
	if err != nil {
		return nil, err
	}
	halts, err := t.Store.Halts(ctx, s)
	if err != nil {
		return nil, err
	}
	rep := &SaleShown{Sale: s.ID, Name: s.Name, Status: tool.SaleState(s, time.Now()), State: s.State, Version: s.Version,
		StartsAt: s.StartsAt.UTC(), EndsAt: s.EndsAt.UTC(), Window: s.Window().String(), Shards: s.Shards, Halts: halts}
	var stats map[int64]schema.ItemStats
	if t.DB != nil {
		_, items, _, err := schema.SaleStats(ctx, t.DB, id)
		if err != nil {
			return nil, err
		}
		stats = map[int64]schema.ItemStats{}
		for _, it := range items {
			stats[it.ID] = it
		}
	}
	soldOut := true
	for _, it := range s.Items {
		rem, err := t.Store.Remaining(ctx, s, it.ID)
		if err != nil {
			return nil, err
		}
		si := SaleItem{Item: it.ID, Name: it.Name, Price: it.Price, Currency: it.Currency, Quantity: it.Quantity,
			Left: tool.Sum(rem), PerShard: rem, Orders: stats[it.ID].ByStatus}
		si.Sold = stats[it.ID].Sold
		soldOut = soldOut && si.Left == 0
		rep.Items = append(rep.Items, si)
	}
	if rep.Status == "ACTIVE" && soldOut {
		rep.Status = "SOLD_OUT"
	}
	showAccess(ctx, t, s, rep)
	showHandOff(ctx, t, s, rep)
	return rep, nil
}

// showHandOff adds the sale's journals and the writer's last drift reading;
// what it cannot read becomes a warning of the report (an operator's
// inspection must not fail on the data it is there to inspect).
func showHandOff(ctx context.Context, t *tool.Tool, s *sale.Sale, rep *SaleShown) {
	js, err := t.Store.ReadJournals(ctx, s)
	if err != nil {
		rep.Warnings = append(rep.Warnings, err.Error())
	}
	now := time.Now()
	for i, tag := range s.Shards {
		if js.Backlog == nil {
			break
		}
		j := ShardJournal{Shard: tag, Backlog: js.Backlog[i]}
		if at, ok := journal.IDTime(js.Oldest[i]); ok {
			j.Oldest = max(now.Sub(at).Seconds(), 0)
		}
		rep.Journals = append(rep.Journals, j)
	}
	drifts, err := t.Store.ReadDrifts(ctx, []int64{s.ID})
	if err != nil {
		rep.Warnings = append(rep.Warnings, err.Error())
	}
	d, ok := drifts[s.ID]
	if !ok {
		return
	}
	rep.DriftAt = d.At.UTC()
	for i := range rep.Items {
		if v, ok := d.Items[rep.Items[i].Item]; ok {
			rep.Items[i].Drift = &v
		}
	}
}

// Text renders the report.
func (r *SaleShown) Text(w io.Writer) error {
	fmt.Fprintf(w, "sale %d %q  %s  %s .. %s  payment window %s  version %d  shards %d\n", r.Sale, r.Name, r.Status,
		r.StartsAt.Format(time.RFC3339), r.EndsAt.Format(time.RFC3339), r.Window, r.Version, len(r.Shards))
	r.accessText(w)
	if halted := countSet(r.Halts); halted > 0 || r.State != "" {
		fmt.Fprintf(w, "operator state %q, halt keys on %d of %d shards\n", r.State, halted, len(r.Halts))
		off := 0
		for _, h := range r.Halts {
			if h != r.State {
				off++
			}
		}
		if off > 0 {
			fmt.Fprintf(w, "WARNING: %d of %d shards disagree with the operator state (a pause, resume or end that failed half way): run it again\n", off, len(r.Halts))
		}
	}
	tb := tool.NewTable(w, "ITEM", "NAME", "PRICE", "QTY", "SOLD", "PENDING", "PAID", "EXPIRED", "CANCELLED", "FAILED", "REDIS LEFT", "PER SHARD", "DRIFT")
	for _, it := range r.Items {
		per := make([]string, len(it.PerShard))
		for i, n := range it.PerShard {
			per[i] = tool.Itoa(n)
		}
		o, drift := it.Orders, "-"
		if it.Drift != nil {
			drift = tool.Itoa(*it.Drift)
		}
		tb.Row(tool.Itoa(it.Item), it.Name, fmt.Sprintf("%d %s", it.Price, it.Currency), tool.Itoa(it.Quantity), tool.Itoa(it.Sold),
			tool.Itoa(o["PENDING"]), tool.Itoa(o["PAID"]), tool.Itoa(o["EXPIRED"]), tool.Itoa(o["CANCELLED"]), tool.Itoa(o["FAILED"]), tool.Itoa(it.Left), strings.Join(per, ","), drift)
	}
	if err := tb.Flush(); err != nil {
		return err
	}
	return r.handOffText(w)
}

// handOffText renders the journals and the age of the drift reading.
func (r *SaleShown) handOffText(w io.Writer) error {
	var backlog int64
	oldest := 0.0
	per := make([]string, len(r.Journals))
	for i, j := range r.Journals {
		backlog += j.Backlog
		oldest = max(oldest, j.Oldest)
		per[i] = tool.Itoa(j.Backlog)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	if len(r.Journals) > 0 {
		fmt.Fprintf(w, "hand-off journals: %d entries not yet in Kafka (per shard %s), oldest %.1fs\n", backlog, strings.Join(per, ","), oldest)
	}
	if r.DriftAt.IsZero() {
		_, err := fmt.Fprintln(w, "drift: no writer reading in the last 10 minutes (DRIFT -)")
		return err
	}
	_, err := fmt.Fprintf(w, "drift: the writer's reading of %.1fs ago (Q - (S + M + P + J); 0 is right, below 0 an oversell in the making)\n",
		max(time.Since(r.DriftAt).Seconds(), 0))
	return err
}

func countSet(v []string) int {
	n := 0
	for _, s := range v {
		if s != "" {
			n++
		}
	}
	return n
}

// SaleState is the report of `sale pause|resume|end`.
type SaleState struct {
	Sale    int64  `json:"sale"`
	Action  string `json:"action"`
	Status  string `json:"status"`
	Version int64  `json:"version"`
	Shards  int    `json:"shards"`
	// Unrecorded says why the act has no row in PostgreSQL's sale_events
	// (the closing ledger's timing then lacks it); "" when recorded.
	Unrecorded string `json:"unrecorded,omitempty"`
}

// Text renders the report.
func (r *SaleState) Text(w io.Writer) error {
	_, err := fmt.Fprintf(w, "sale %d %s: status %s (version %d); every shard's reserve script obeys it now (%d shards), every gateway within its 1 s refresh\n",
		r.Sale, r.Action, r.Status, r.Version, r.Shards)
	if err == nil && r.Unrecorded != "" {
		_, err = fmt.Fprintf(w, "warning: in force, but not recorded for the sale report: %s\n", r.Unrecorded)
	}
	return err
}

// SetSaleState pauses (sale.StatePaused), resumes ("") or ends
// (sale.StateEnded) sale id: see stock.Store.SetState. The act is then
// recorded in PostgreSQL (tool.Tool.RecordAct); the kill switch never waits on it.
func SetSaleState(ctx context.Context, t *tool.Tool, id int64, state string) (*SaleState, error) {
	if _, err := t.LoadSale(ctx, id); err != nil {
		return nil, err
	}
	s, err := t.Store.SetState(ctx, id, state)
	if err != nil {
		return nil, err
	}
	rep := &SaleState{Sale: id, Action: stock.StateAction(state), Status: tool.SaleState(s, time.Now()), Version: s.Version, Shards: len(s.Shards)}
	kind := map[string]string{sale.StatePaused: schema.EventPause, "": schema.EventResume, sale.StateEnded: schema.EventEnd}[state]
	rep.Unrecorded = t.RecordAct(ctx, id, kind, nil)
	return rep, nil
}
