// Package catalog holds the sales the gateway serves: an immutable snapshot
// behind an atomic pointer, mapping item ids and sale ids to everything a
// request needs (window, shard tags, precomputed bodies, sold-out flags), so a
// lookup is one map read and allocates nothing. The public description
// carries the sale's branding, and each sale has its page's policy.
//
// Run keeps it current: every refresh interval (default 1s) it reloads the
// sales from its Source (in the gateway, the sales index in Redis), rebuilding
// the snapshot when a sale is new, changed (its Version grew, after a reshard for example) or gone, reads
// every item's remaining stock and rebuilds the public sale descriptions; every
// poll interval (default 200ms) it reads the stock of every item that has a
// sold-out flag set, so returned stock clears the flags within one second (see
// package soldout).
package catalog

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"flashsale/gateway/internal/page"
	"flashsale/gateway/internal/room"
	"flashsale/gateway/internal/soldout"
	"flashsale/sharding/api"
	"flashsale/sharding/repeatlog"
	"flashsale/sharding/sale"
)

// Source is where sales and stock readings come from (in the gateway, the
// sales index reader in package app over a *stock.Store).
type Source interface {
	Sales(ctx context.Context) ([]*sale.Sale, error)
	// ReadStock reads an item's stock per shard, stock.Unknown for a shard
	// that did not answer (see stock.Store.ReadStock).
	ReadStock(ctx context.Context, sale *sale.Sale, itemID int64) ([]int64, error)
}

// Sale is one loaded sale with its precomputed fields. Everything but the
// description body is immutable.
type Sale struct {
	*sale.Sale
	Start, End int64 // StartsAt and EndsAt in unix nanoseconds
	// Halt is the operator's state of the sale (sale.Sale.State):
	// HaltNone, HaltPaused or HaltEnded.
	Halt uint8
	// NotStarted is the 403 body {"error":"SALE_NOT_STARTED","startsAt":"..."}.
	NotStarted []byte
	// Page is the sale page's policy: images from the origins the sale's
	// branding names (page.Policy).
	Page *page.Policy
	// Room is the sale's waiting room or raffle (room.FromSale), made once
	// here rather than on every ticket request; InRoom is false for an
	// open sale.
	Room   room.Sale
	InRoom bool
	Items  []*Item
	desc   atomic.Pointer[[]byte]
}

// Halt values of Sale.
const (
	HaltNone   uint8 = iota
	HaltPaused       // 503 SALE_PAUSED, status PAUSED
	HaltEnded        // 410 SALE_ENDED, status ENDED, before or in the window
)

// Description returns the current public JSON description of the sale; the
// slice is immutable and shared.
// Remaining returns the sale's units left over its items from the last
// stock readings (an item flagged sold out counts 0), or -1 before the first
// reading of every item.
func (s *Sale) Remaining() int64 {
	var n int64
	for _, it := range s.Items {
		r := it.Flags.Remaining()
		if r < 0 {
			return -1
		}
		if !it.Flags.SoldOut() {
			n += r
		}
	}
	return n
}

// Closed reports whether the sale's last payment window (its end plus the
// payment window) closed more than margin before n (Unix ns): nothing but a
// rare late cancel can touch its orders any more.
func (s *Sale) Closed(n int64, margin time.Duration) bool {
	return n > s.End+int64(s.Window())+int64(margin)
}

func (s *Sale) Description() []byte {
	if p := s.desc.Load(); p != nil {
		return *p
	}
	return nil
}

// Item is one item of a loaded sale.
type Item struct {
	Sale  *Sale
	Item  *sale.Item
	Flags *soldout.Item
}

// Snapshot is an immutable view of every loaded sale.
type Snapshot struct {
	items map[int64]*Item
	sales map[int64]*Sale
}

// Item returns the item with id, or nil. It allocates nothing.
func (s *Snapshot) Item(id int64) *Item { return s.items[id] }

// Sale returns the sale with id, or nil.
func (s *Snapshot) Sale(id int64) *Sale { return s.sales[id] }

// Sales returns every loaded sale, in no order. It allocates.
func (s *Snapshot) Sales() []*Sale {
	out := make([]*Sale, 0, len(s.sales))
	for _, sl := range s.sales {
		out = append(out, sl)
	}
	return out
}

// Config tunes Run.
type Config struct {
	Refresh time.Duration // reload and full stock reading, default 1s
	Poll    time.Duration // reading of flagged items, default 200ms
	Timeout time.Duration // bound of one Redis reading, default 1s
	// SoldOutGauge, when set, is told each item's sold-out state after every
	// full reading (for the flashsale_gateway_soldout gauge).
	SoldOutGauge func(itemID int64, soldOut bool)
	// SaleGauge, when set, is told after every refresh whether each sale is
	// selling (window open, not paused or ended) and whether it is paused.
	SaleGauge func(saleID int64, selling, paused bool)
	// StockGauge, when set, is told every reading of an item's shards (for
	// the flashsale_gateway_stock_units gauge): a poller, not the requests.
	// A shard that did not answer reads stock.Unknown; tags are the sale's
	// shards, in the same order.
	StockGauge func(saleID, itemID int64, tags []string, perShard []int64)
	// Forget, when set, is told once that a sale is over, its last payment
	// window closed Linger ago, or that it left the catalog: the gauges of
	// the sale and its items can go (a gateway that has seen hundreds of
	// sales then exposes the current ones only). It is told again if the
	// sale comes back (an end moved later).
	Forget func(saleID int64, items []int64)
	// Linger is how long a sale's gauges stay after its last payment window
	// closed (default 1m).
	Linger time.Duration
	// Prepare, when set, is given every sale the catalog is about to serve
	// anew (a new sale, a new version of its layout), before any request
	// can see it: the gateway beats its fence on their shards, so a sale
	// created with its start already past is sold from its first request,
	// not answered 503 until the next beat. An error is logged; the sales
	// are served anyway (their purchases answer 503 until a beat lands, as
	// on any shard whose beat is stale).
	Prepare func(ctx context.Context, sales []*Sale) error
	Log     *slog.Logger
}

// Catalog is the current snapshot plus the loop that refreshes it. It is safe
// for concurrent use; only Run (one goroutine) writes.
type Catalog struct {
	src  Source
	cfg  Config
	snap atomic.Pointer[Snapshot]
	kick chan struct{} // RefreshSoon's request, capacity 1

	gaugesMu sync.Mutex
	gauged   map[int64][]int64 // sales whose gauges are set -> their items
}

// New returns an empty catalog over src.
func New(src Source, cfg Config) *Catalog {
	if cfg.Refresh <= 0 {
		cfg.Refresh = time.Second
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 200 * time.Millisecond
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Linger <= 0 {
		cfg.Linger = time.Minute
	}
	c := &Catalog{src: src, cfg: cfg, kick: make(chan struct{}, 1), gauged: map[int64][]int64{}}
	c.snap.Store(&Snapshot{items: map[int64]*Item{}, sales: map[int64]*Sale{}})
	return c
}

// RefreshSoon asks Run to reload the sales now rather than at the next tick,
// for example after a shard answered that a reshard froze it. It never blocks;
// requests made while one is pending coalesce.
func (c *Catalog) RefreshSoon() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Snapshot returns the current snapshot.
func (c *Catalog) Snapshot() *Snapshot { return c.snap.Load() }

// Refresh reloads the sales, reads every item's stock and rebuilds the sale
// descriptions. Run calls it every refresh interval; tests call it directly.
func (c *Catalog) Refresh(ctx context.Context, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	sales, err := c.src.Sales(ctx)
	if err != nil {
		return err
	}
	c.install(ctx, sales, now)
	snap := c.snap.Load()
	var items []*Item
	for _, s := range snap.sales {
		for _, it := range s.Items {
			// An ended sale's stock no longer changes what the gateway answers.
			if now.UnixNano() < s.End || it.Flags.Remaining() < 0 {
				items = append(items, it)
			}
		}
	}
	err = c.readAll(ctx, items)
	for _, s := range snap.sales {
		s.describe(now)
	}
	c.gauge(snap, now.UnixNano())
	return err
}

// gauge sets the sale and sold-out gauges of the sales still open (or
// closed less than Linger ago) and tells Forget, once, of the others and of
// the sales gone from the catalog.
func (c *Catalog) gauge(snap *Snapshot, n int64) {
	c.gaugesMu.Lock()
	defer c.gaugesMu.Unlock()
	for _, s := range snap.sales {
		ids := make([]int64, 0, len(s.Items))
		for _, it := range s.Items {
			ids = append(ids, it.Item.ID)
		}
		if s.Closed(n, c.cfg.Linger) {
			// Once: a sale loaded after it closed has no entry yet, but
			// its first stock reading set its stock gauges.
			if items, seen := c.gauged[s.ID]; (!seen || items != nil) && c.cfg.Forget != nil {
				c.cfg.Forget(s.ID, ids)
			}
			c.gauged[s.ID] = nil
			continue
		}
		for _, it := range s.Items {
			if c.cfg.SoldOutGauge != nil {
				c.cfg.SoldOutGauge(it.Item.ID, it.Flags.SoldOut())
			}
		}
		c.gauged[s.ID] = ids
		if c.cfg.SaleGauge != nil {
			c.cfg.SaleGauge(s.ID, s.Halt == HaltNone && s.Start <= n && n < s.End, s.Halt == HaltPaused)
		}
	}
	for id, items := range c.gauged {
		if snap.sales[id] == nil { // gone from the catalog
			if items != nil && c.cfg.Forget != nil {
				c.cfg.Forget(id, items)
			}
			delete(c.gauged, id)
		}
	}
}

// Poll reads the stock of every item with a flag set, clearing the flags of
// shards that have stock again.
func (c *Catalog) Poll(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	now := time.Now().UnixNano()
	var items []*Item
	for _, s := range c.snap.Load().sales {
		if now >= s.End {
			continue
		}
		for _, it := range s.Items {
			if it.Flags.Any() {
				items = append(items, it)
			}
		}
	}
	return c.readAll(ctx, items)
}

// readAll reads items concurrently (at most pollParallel at once, pipelined by
// rueidis), so a reading of many items costs about one round trip, and
// returns the first error.
func (c *Catalog) readAll(ctx context.Context, items []*Item) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		sem      = make(chan struct{}, pollParallel)
	)
	for _, it := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := c.read(ctx, it); err != nil {
				mu.Lock()
				firstErr = cmp.Or(firstErr, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// pollParallel bounds the concurrent stock readings of one poll.
const pollParallel = 32

func (c *Catalog) read(ctx context.Context, it *Item) error {
	rem, err := c.src.ReadStock(ctx, it.Sale.Sale, it.Item.ID)
	if err != nil {
		return err
	}
	it.Flags.Observe(rem)
	if c.cfg.StockGauge != nil {
		c.cfg.StockGauge(it.Sale.ID, it.Item.ID, it.Sale.Shards, rem)
	}
	return nil
}

// Run refreshes and polls until ctx is done. Failures are logged and retried
// at the next tick; the last good snapshot stays in use. Polling runs in its
// own goroutine so that a slow refresh (many sales) never delays the clearing
// of sold-out flags.
func (c *Catalog) Run(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		repeatlog.Loop(ctx, c.cfg.Poll, c.cfg.Log, "sold-out poll", func(ctx context.Context, _ time.Time) error { return c.Poll(ctx) })
	}()
	defer func() { <-done }()
	refresh := time.NewTicker(c.cfg.Refresh)
	defer refresh.Stop()
	var fails repeatlog.Failure
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-refresh.C:
			fails.Round(ctx, c.cfg.Log, c.Refresh(ctx, now), "catalog refresh")
		case <-c.kick:
			fails.Round(ctx, c.cfg.Log, c.Refresh(ctx, time.Now()), "catalog refresh")
		}
	}
}

// install builds a new snapshot from sales, reusing the entries (and so the
// flags) of sales whose Version did not change, and prepares the shards of
// the others (Config.Prepare) before it publishes them.
func (c *Catalog) install(ctx context.Context, sales []*sale.Sale, now time.Time) {
	old := c.snap.Load()
	next := &Snapshot{items: make(map[int64]*Item), sales: make(map[int64]*Sale, len(sales))}
	var prepare []*Sale
	for _, sl := range sales {
		if len(sl.Shards) == 0 {
			continue // not placed yet: nothing to sell from
		}
		s := old.sales[sl.ID]
		fresh := s == nil || s.Version != sl.Version || len(s.Shards) != len(sl.Shards)
		if fresh {
			s = newSale(sl, now)
			prepare = append(prepare, s)
		}
		next.sales[sl.ID] = s
		for _, it := range s.Items {
			if prev := next.items[it.Item.ID]; prev != nil {
				keep := preferred(prev.Sale, s, now)
				if fresh {
					c.cfg.Log.Warn("item id in two sales", "item", it.Item.ID, "sales", []int64{prev.Sale.ID, s.ID}, "serving", keep.ID)
				}
				if keep == prev.Sale {
					continue
				}
			}
			next.items[it.Item.ID] = it
		}
	}
	if len(prepare) > 0 && c.cfg.Prepare != nil {
		if err := c.cfg.Prepare(ctx, prepare); err != nil {
			c.cfg.Log.Warn("preparing the shards of new sales; their purchases answer 503 until a fence beat lands", "err", err)
		}
	}
	c.snap.Store(next)
}

// preferred picks, of two sales selling the same item id, the one whose window
// holds now, else the one that starts later.
func preferred(a, b *Sale, now time.Time) *Sale {
	n := now.UnixNano()
	aIn, bIn := a.Start <= n && n < a.End, b.Start <= n && n < b.End
	switch {
	case aIn && !bIn:
		return a
	case bIn && !aIn:
		return b
	case a.Start >= b.Start:
		return a
	}
	return b
}

func newSale(sl *sale.Sale, now time.Time) *Sale {
	s := &Sale{Sale: sl, Start: sl.StartsAt.UnixNano(), End: sl.EndsAt.UnixNano()}
	switch sl.State {
	case sale.StatePaused:
		s.Halt = HaltPaused
	case sale.StateEnded:
		s.Halt = HaltEnded
	}
	b := append([]byte(nil), `{"error":"`+api.SaleNotStarted+`","startsAt":"`...)
	b = sl.StartsAt.UTC().AppendFormat(b, rfc3339Milli)
	s.NotStarted = append(b, `"}`...)
	s.Page = page.PolicyFor(sl.ImageOrigins())
	s.Room, s.InRoom = room.FromSale(sl)
	shards := len(sl.Shards)
	for i := range sl.Items {
		s.Items = append(s.Items, &Item{Sale: s, Item: &sl.Items[i], Flags: soldout.NewItem(shards)})
	}
	s.describe(now)
	return s
}

// rfc3339Milli is RFC 3339 with milliseconds, the API's time format: the
// sale page enables "buy" at startsAt, so a start within a second must not
// be rounded.
const rfc3339Milli = "2006-01-02T15:04:05.000Z07:00"

// describe rebuilds the public description body of s at now.
func (s *Sale) describe(now time.Time) {
	b := make([]byte, 0, 256+128*len(s.Items))
	b = append(b, `{"saleId":`...)
	b = strconv.AppendInt(b, s.ID, 10)
	b = append(b, `,"name":`...)
	b = appendString(b, s.Name)
	b = append(b, `,"status":"`...)
	b = append(b, s.status(now.UnixNano())...)
	b = append(b, `","startsAt":"`...)
	b = s.StartsAt.UTC().AppendFormat(b, rfc3339Milli)
	b = append(b, `","endsAt":"`...)
	b = s.EndsAt.UTC().AppendFormat(b, rfc3339Milli)
	if r := s.WaitingRoom; r != nil && r.PreQueue > 0 {
		// The sale page joins the pre-queue by itself from this time on.
		b = append(b, `","queueOpensAt":"`...)
		b = s.StartsAt.Add(-time.Duration(r.PreQueue)).UTC().AppendFormat(b, rfc3339Milli)
	}
	b = append(b, `","paymentWindow":"`...)
	b = append(b, s.Window().String()...)
	b = append(b, `","access":"`...)
	b = append(b, s.Mode()...)
	b = append(b, '"')
	b = s.appendAccess(b, now)
	if br := s.Brand; br != nil {
		b = append(b, `,"brand":`...)
		b = appendBrand(b, br)
	}
	b = append(b, `,"items":[`...)
	for i, it := range s.Items {
		if i > 0 {
			b = append(b, ',')
		}
		b = it.appendJSON(b)
	}
	b = append(b, "]}"...)
	s.desc.Store(&b)
}

// appendAccess appends the description's fair-access fields: the phase and
// presale, the raffle's entries, the draw's commitment.
func (s *Sale) appendAccess(b []byte, now time.Time) []byte {
	if p := s.Presale; p != nil {
		b = append(b, `,"phase":"`...)
		if s.InPresale(now) {
			b = append(b, "PRESALE"...)
		} else {
			b = append(b, "GENERAL"...)
		}
		b = append(b, `","presale":`...)
		j, _ := json.Marshal(p) // a Presale always marshals
		b = append(b, j...)
	}
	if r := s.Raffle; r != nil && s.Mode() == sale.AccessRaffle {
		b = append(b, `,"raffle":{"entriesOpenAt":"`...)
		b = r.EntriesOpen.UTC().AppendFormat(b, rfc3339Milli)
		b = append(b, `","entriesCloseAt":"`...)
		b = r.EntriesClose.UTC().AppendFormat(b, rfc3339Milli)
		b = append(b, `"}`...)
	}
	if d := s.Draw; d != nil {
		b = append(b, `,"draw":{"commitment":`...)
		b = appendString(b, d.Commitment)
		if d.Round != 0 {
			b = append(b, `,"chain":`...)
			b = appendString(b, d.Chain)
			b = append(b, `,"round":`...)
			b = strconv.AppendUint(b, d.Round, 10)
			b = append(b, `,"headKey":`...)
			b = appendString(b, d.HeadKey)
		}
		b = append(b, '}')
	}
	return b
}

// status is the description's status at n (unix ns): ENDED, PAUSED,
// SCHEDULED, SOLD_OUT (every item's flag is set) or ACTIVE.
func (s *Sale) status(n int64) string {
	allGone := true
	for _, it := range s.Items {
		if !it.Flags.SoldOut() {
			allGone = false
		}
	}
	switch {
	case s.Halt == HaltEnded || n >= s.End:
		return "ENDED"
	case s.Halt == HaltPaused:
		return "PAUSED"
	case n < s.Start:
		return "SCHEDULED"
	case allGone:
		return "SOLD_OUT"
	}
	return "ACTIVE"
}

// appendJSON appends the item's entry of the description: remaining is
// the stock of the last reading, null before the first.
func (it *Item) appendJSON(b []byte) []byte {
	b = append(b, `{"itemId":`...)
	b = strconv.AppendInt(b, it.Item.ID, 10)
	b = append(b, `,"name":`...)
	b = appendString(b, it.Item.Name)
	b = append(b, `,"price":`...)
	b = strconv.AppendInt(b, it.Item.Price, 10)
	b = append(b, `,"currency":`...)
	b = appendString(b, it.Item.Currency)
	b = append(b, `,"quantity":`...)
	b = strconv.AppendInt(b, it.Item.Quantity, 10)
	if it.Item.Image != "" {
		b = append(b, `,"image":`...)
		b = appendString(b, it.Item.Image)
	}
	if it.Item.Description != "" {
		b = append(b, `,"description":`...)
		b = appendString(b, it.Item.Description)
	}
	b = append(b, `,"remaining":`...)
	if r := it.Flags.Remaining(); r >= 0 {
		b = strconv.AppendInt(b, r, 10)
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}')
}

// appendBrand appends the sale's branding as the description's "brand"
// object (the sale file's fields, empty ones left out).
func appendBrand(b []byte, br *sale.Brand) []byte {
	j, _ := json.Marshal(br) // a Brand always marshals
	return append(b, j...)
}

// appendString appends v as a JSON string.
func appendString(b []byte, v string) []byte {
	q, _ := json.Marshal(v) // a string always marshals
	return append(b, q...)
}
