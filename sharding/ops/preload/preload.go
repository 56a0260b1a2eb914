package preload

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/draw"
	"flashsale/sharding/ops/reconcile"
	"flashsale/sharding/ops/tool"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
	"flashsale/writer/schema"
)

// DefaultShards is the shard count of a preload when neither the command line,
// Redis nor PostgreSQL names one.
const DefaultShards = 8

// ErrLive means preload refused to overwrite a sale that Redis already holds.
var ErrLive = errors.New("refusing to overwrite a live sale without --force")

// PreloadReport says what preload wrote.
type PreloadReport struct {
	Sale      int64                      `json:"sale"`
	Name      string                     `json:"name"`
	State     string                     `json:"state"`
	Shards    int                        `json:"shards"`
	ShardFrom string                     `json:"shardCountFrom"` // flag, redis, postgresql or default
	Forced    bool                       `json:"forced"`
	Placement []tool.Placement           `json:"placement"`
	Units     map[int64]int64            `json:"units"` // item -> quantity written over all shards
	Reconcile *reconcile.ReconcileReport `json:"reconcile,omitempty"`
	// Warning says what of the sale's fair access a preload from
	// PostgreSQL alone could not restore.
	Warning string `json:"warning,omitempty"`
}

// Preload copies sale id's items from PostgreSQL into Redis: its description
// (with the shard tags placed over the live masters) and each item's quantity
// split over the shards. shards 0 keeps the sale's current count (Redis, then
// PostgreSQL sales.shards, then DefaultShards).
//
// A sale Redis already holds is refused with ErrLive unless force is set. A
// forced preload keeps the sale's tags (a different shard count is a reshard,
// not a preload), rewrites every shard's stock to the full quantity and then
// reconciles with PostgreSQL at once, so units held by active orders are taken
// back out by compare-and-set and buyer records stay consistent.
func Preload(ctx context.Context, t *tool.Tool, id int64, shards int, force bool) (*PreloadReport, error) {
	if err := t.NeedDB(); err != nil {
		return nil, err
	}
	sale, pgShards, err := preloadSource(ctx, t, id)
	if err != nil {
		return nil, err
	}
	rep := &PreloadReport{Sale: id, Name: sale.Name, State: tool.SaleState(sale, time.Now()), Forced: force, Units: map[int64]int64{}}
	cur, err := liveSale(ctx, t, id)
	if err != nil {
		return nil, err
	}
	if cur != nil {
		rep.State = tool.SaleState(cur, time.Now())
	}
	if shards, rep.ShardFrom, err = preloadShardCount(shards, cur, pgShards); err != nil {
		return nil, err
	}
	if cur != nil && !force {
		return nil, fmt.Errorf("sale %d (%s, %s) is already in Redis with %d shards, version %d: %w",
			id, sale.Name, rep.State, len(cur.Shards), cur.Version, ErrLive)
	}
	top, err := stock.Topology(ctx, t.Redis)
	if err != nil {
		return nil, err
	}
	if err := placePreload(sale, cur, shards, top); err != nil {
		return nil, err
	}
	if cur == nil {
		if rep.Warning, err = restoreAccess(ctx, t, sale); err != nil {
			return nil, err
		}
	}
	if err := t.Store.Preload(ctx, sale, force); err != nil {
		if errors.Is(err, stock.ErrLive) {
			return nil, fmt.Errorf("sale %d already has stock keys in Redis: %w", id, ErrLive)
		}
		return nil, err
	}
	rep.written(sale, top)
	if force {
		// The full quantity is now in Redis; take back what PostgreSQL says is
		// held and reconcile buyer records.
		if rep.Reconcile, err = reconcile.Reconcile(ctx, t, id, reconcile.ReconcileOptions{Repair: true, Grace: 30 * time.Second}); err != nil {
			return rep, fmt.Errorf("reconciling after a forced preload: %w", err)
		}
	}
	return rep, nil
}

// restoreSeal puts back in Redis the tree-head key of a sealed draw and the
// draw's log, from PostgreSQL: the log the writer copied, or, when it holds
// none, the commitment entry the sale's creation wrote.
func restoreSeal(ctx context.Context, t *tool.Tool, sale *sale.Sale, at time.Time) error {
	d := sale.Draw
	if d.HeadKey != "" {
		key, err := schema.DrawHeadKey(ctx, t.DB, sale.ID)
		if err != nil {
			return err
		}
		b, err := hex.DecodeString(key)
		if err != nil || len(b) != ed25519.SeedSize {
			return fmt.Errorf("sale %d: PostgreSQL holds no tree-head key of its sealed draw (%q): its heads could not be signed", sale.ID, key)
		}
		k := ed25519.NewKeyFromSeed(b)
		if pub := hex.EncodeToString(k.Public().(ed25519.PublicKey)); pub != d.HeadKey {
			return fmt.Errorf("sale %d: the tree-head key PostgreSQL keeps is not the one the sale publishes (%s)", sale.ID, d.HeadKey)
		}
		held, err := t.Store.PutDrawHeadKey(ctx, sale.ID, k, at)
		if err != nil {
			return err
		}
		if !held.Equal(k) {
			return fmt.Errorf("sale %d: Redis holds another tree-head key (%s); delete the key, then preload again", sale.ID, sharding.RoomHeadKeyKey(sale.ID))
		}
	}
	log, err := schema.ReadDrawLog(ctx, t.DB, sale.ID)
	if err != nil {
		return err
	}
	if len(log) > 0 {
		_, err = t.Store.RestoreDrawLog(ctx, sale.ID, log, at)
		return err
	}
	e := &draw.Event{Event: draw.EventCommit, At: time.Now().UnixMilli(), Commitment: d.Commitment, Chain: d.Chain, Round: d.Round, HeadKey: d.HeadKey}
	_, _, err = t.Store.LogDrawEvent(ctx, sale.ID, e, at)
	return err
}

// restoreAccess puts back in Redis, for a sale Redis lost, what its draw
// and presale keep there beside the description, from PostgreSQL: the
// draw's seed (the one its commitment names, or nothing is written), and a
// presale's cap while the presale has not started (once it has, the units
// it sold are not known here: the cap is left missing, which the gateways
// read as sold, the safe side). A drawn sale whose seed PostgreSQL does not
// hold (created before migration 00004) loses its commitment: its draw
// will use a seed drawn at the freeze, and the warning says so.
func restoreAccess(ctx context.Context, t *tool.Tool, sale *sale.Sale) (string, error) {
	at := tool.AccessExpiry(sale)
	var warning string
	if sale.Draw != nil {
		seed, err := schema.DrawSeed(ctx, t.DB, sale.ID)
		if err != nil {
			return "", err
		}
		h, perr := draw.ParseHash(seed)
		switch {
		case seed == "":
			sale.Draw = nil
			warning = "PostgreSQL holds no seed of this sale's draw (created before it kept one): the commitment is dropped, and the draw will use a seed drawn at the freeze, which nobody saw committed"
		case perr != nil || draw.Commitment(h).String() != sale.Draw.Commitment:
			return "", fmt.Errorf("sale %d: the seed PostgreSQL keeps is not the one its commitment %s names", sale.ID, sale.Draw.Commitment)
		default:
			held, err := t.Store.PutDrawSeed(ctx, sale.ID, seed, at)
			if err != nil {
				return "", err
			}
			if held != seed {
				return "", fmt.Errorf("sale %d: Redis holds another seed for its draw (%s); delete the key, then preload again", sale.ID, sharding.RoomSeedKey(sale.ID))
			}
		}
	}
	if sale.Draw != nil {
		if err := restoreSeal(ctx, t, sale, at); err != nil {
			return "", err
		}
	}
	if p := sale.Presale; p != nil && p.Cap > 0 && time.Now().Before(p.StartsAt) {
		if err := t.Store.PutPresaleCap(ctx, sale.ID, p.Cap, at); err != nil {
			return "", err
		}
	}
	return warning, nil
}

// preloadSource reads sale id from PostgreSQL with its shard count there (0
// when unset), and refuses a sale PostgreSQL lacks or that has no items:
// there would be nothing to preload.
func preloadSource(ctx context.Context, t *tool.Tool, id int64) (*sale.Sale, int, error) {
	sale, pgShards, found, err := schema.ReadSale(ctx, t.DB, id)
	if err != nil {
		return nil, 0, err
	}
	if !found {
		return nil, 0, fmt.Errorf("unknown sale %d: PostgreSQL has no such sale (create it with `flashctl sale create` first)", id)
	}
	if len(sale.Items) == 0 {
		return nil, 0, fmt.Errorf("sale %d has no items in PostgreSQL", id)
	}
	return sale, pgShards, nil
}

// liveSale returns the description Redis holds for sale id, nil when it
// holds none: a preload over a live sale is refused or forced, never silent.
func liveSale(ctx context.Context, t *tool.Tool, id int64) (*sale.Sale, error) {
	cur, err := t.Store.LoadSale(ctx, id)
	if errors.Is(err, stock.ErrNoSale) {
		return nil, nil
	}
	return cur, err
}

// preloadShardCount returns the shard count of a preload and where it came
// from (see PreloadReport.ShardFrom): shards when the command line names one,
// else the live sale's (cur, nil when Redis holds none), else PostgreSQL's
// pgShards, else DefaultShards. A count outside 1..sharding.MaxShards is an
// error whatever its source.
func preloadShardCount(shards int, cur *sale.Sale, pgShards int) (int, string, error) {
	from := "flag"
	switch {
	case shards > 0:
	case cur != nil:
		shards, from = len(cur.Shards), "redis"
	case pgShards > 0:
		shards, from = pgShards, "postgresql"
	default:
		shards, from = DefaultShards, "default"
	}
	if shards < 1 || shards > sharding.MaxShards {
		return 0, "", fmt.Errorf("shard count %d: want 1..%d", shards, sharding.MaxShards)
	}
	return shards, from, nil
}

// placePreload gives sale its shard tags: those of the live sale cur when
// Redis holds one (a forced preload keeps its layout, version and state, and
// a different count is a reshard's job), else shards new tags placed over
// top's masters.
func placePreload(sale, cur *sale.Sale, shards int, top *sharding.Topology) error {
	if cur == nil {
		var err error
		sale.Shards, err = sharding.PlaceTags(sale.ID, shards, top)
		return err
	}
	if len(cur.Shards) != shards {
		return fmt.Errorf("sale %d has %d shards in Redis; change the count with `flashctl reshard --sale %d --shards %d`, not with preload", sale.ID, len(cur.Shards), sale.ID, shards)
	}
	// The operator's state stays: its halt keys are on the shards.
	sale.Shards, sale.Version, sale.State = cur.Shards, cur.Version, cur.State
	keepFrontDoor(sale, cur)
	return nil
}

// keepFrontDoor copies to sale, read from PostgreSQL, the front door and
// fair access of cur, the live description (ticket, waiting room, proof of
// work, mode, raffle window, presale and the draw's commitment, whose seed
// is in Redis): a forced preload rewrites the stock, not what the gateways
// already serve. (A sale Redis lost gets them from PostgreSQL instead:
// restoreAccess.)
func keepFrontDoor(sale, cur *sale.Sale) {
	sale.TicketRequired, sale.WaitingRoom, sale.PowDifficulty = cur.TicketRequired, cur.WaitingRoom, cur.PowDifficulty
	sale.Access, sale.Raffle, sale.Presale, sale.Draw = cur.Access, cur.Raffle, cur.Presale, cur.Draw
}

// written fills in what a preload of sale wrote: its shards, where each one
// lives in top, and each item's quantity over all of them.
func (r *PreloadReport) written(sale *sale.Sale, top *sharding.Topology) {
	r.Shards = len(sale.Shards)
	for i, tag := range sale.Shards {
		r.Placement = append(r.Placement, tool.Placement{Shard: i, Tag: tag, Slot: sharding.Slot([]byte("{" + tag + "}")), Master: top.MasterOfTag(tag)})
	}
	for _, it := range sale.Items {
		r.Units[it.ID] = it.Quantity
	}
}

// Text renders the preload.
func (r *PreloadReport) Text(w io.Writer) error {
	fmt.Fprintf(w, "preloaded sale %d %q (%s): %d shards (count from %s)%s\n", r.Sale, r.Name, r.State, r.Shards, r.ShardFrom,
		map[bool]string{true: ", forced", false: ""}[r.Forced])
	var items []string
	for id, q := range r.Units {
		items = append(items, fmt.Sprintf("item %d: %d units", id, q))
	}
	fmt.Fprintln(w, strings.Join(items, ", "))
	tb := tool.NewTable(w, "shard", "tag", "slot", "master")
	for _, p := range r.Placement {
		tb.Row(tool.Itoa(int64(p.Shard)), p.Tag, tool.Itoa(int64(p.Slot)), p.Master)
	}
	if err := tb.Flush(); err != nil {
		return err
	}
	if r.Warning != "" {
		fmt.Fprintln(w, "warning: "+r.Warning)
	}
	if r.Reconcile != nil {
		fmt.Fprintln(w, "\nreconcile after the forced preload:")
		return r.Reconcile.Text(w)
	}
	return nil
}
