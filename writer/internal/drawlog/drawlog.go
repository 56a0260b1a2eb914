// Package drawlog keeps each drawn sale's draw log in PostgreSQL. The
// gateways and the ops tool append the log's entries (commitment, freeze,
// beacon, reveal, aborts with their reasons) to a Redis list,
// {room:<sale>}:log (lua/draw_log.lua), which expires a day after the sale;
// every Interval the Copier reads the list of each sale with a draw (access
// queue or raffle, from PostgreSQL's sales rows), checks it, and inserts the
// entries PostgreSQL lacks into draw_log (schema.InsertDrawLog).
//
// What Redis holds is input, and only a log that checks whole is copied:
// draw.CheckLog (the hash chain, the sequence numbers, the sale, the order of
// events), with at most MaxEntries entries, each body valid UTF-8, one JSON
// value and at most MaxBody bytes. A log that does not check is not copied at
// all (flashsale_writer_draw_log_refused_total, an error line) and PostgreSQL
// keeps what it holds. An entry at a sequence number PostgreSQL holds with
// another hash (Redis lost the log and it was written again otherwise, or a
// hand-made change) is never written over
// (flashsale_writer_draw_log_conflicts_total, an error line); nothing after
// it is copied. Both are counted at every read while they last; their lines
// are logged once per sale and problem, then again every repeatlog.Every.
// A log Redis holds shorter than PostgreSQL's (lost in a failover, expired)
// copies nothing and takes nothing away.
//
// A sale is read until its log is final, its last entry a reveal once the
// sale has ended (its scheduled end), and at most Tail after its end. Only a
// log that Redis holds beyond what PostgreSQL held at the last read is
// compared with PostgreSQL again, so a sale costs one LRANGE per Interval.
// Several writers may copy at once: the inserts are idempotent.
package drawlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/redis/rueidis"

	"flashsale/sharding"
	"flashsale/sharding/draw"
	"flashsale/sharding/repeatlog"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
	"flashsale/writer/internal/obs"
	"flashsale/writer/schema"
)

// Bounds of a log read from Redis: a draw has a handful of entries (a
// commitment, a freeze, a beacon, a reveal, three more per redraw).
const (
	MaxEntries = 256
	MaxBody    = 8 << 10
)

// Config tunes a Copier.
type Config struct {
	// Interval is the time between reads (default 1s).
	Interval time.Duration
	// Tail is how long after a sale's scheduled end its log is still read
	// when it is not final (default 1h).
	Tail time.Duration
	// Sales limits the copy to these sales; empty means every drawn sale.
	Sales []int64
}

// Copier copies draw logs from Redis to PostgreSQL. Drive it with Run, or
// step it with Once in tests. It is not safe for concurrent use.
type Copier struct {
	cfg   Config
	db    schema.Querier
	redis *stock.Store
	m     *obs.Metrics
	log   *slog.Logger
	held  map[int64][]draw.Entry // what PostgreSQL holds of a sale's log, as last read or written
	final map[int64]bool         // sales whose log is final: no longer read
	told  map[int64]problem      // the last problem logged per sale
}

type problem struct {
	msg string
	at  time.Time
}

// New returns a Copier on the PostgreSQL behind db (a pool) and the Redis
// behind redis.
func New(cfg Config, db schema.Querier, redis *stock.Store, m *obs.Metrics, log *slog.Logger) *Copier {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Tail <= 0 {
		cfg.Tail = time.Hour
	}
	return &Copier{cfg: cfg, db: db, redis: redis, m: m, log: log,
		held: map[int64][]draw.Entry{}, final: map[int64]bool{}, told: map[int64]problem{}}
}

// Run copies every Interval until ctx ends; a failed round is logged (thinned
// by repeatlog) and the next one tries again.
func (c *Copier) Run(ctx context.Context) {
	repeatlog.Loop(ctx, c.cfg.Interval, c.log, "draw log copy", func(ctx context.Context, now time.Time) error {
		_, err := c.Once(ctx, now)
		return err
	})
}

// Outcome of one sale's read.
type Outcome int

// Outcomes of Copy.
const (
	Unchanged Outcome = iota // nothing new in Redis
	Copied                   // PostgreSQL holds the Redis log now
	Refused                  // the Redis log does not check: nothing copied
	Conflict                 // Redis and PostgreSQL disagree at an entry: the one held is kept
	Final                    // the log is final: no longer read
)

// Once reads the log of every drawn sale not final at now and copies what
// PostgreSQL lacks. It returns how many entries it inserted, and the errors
// of the sales it could not read (the others are copied). A refused log or a
// conflict is no error of the round: it is counted and logged.
func (c *Copier) Once(ctx context.Context, now time.Time) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*c.cfg.Interval)
	defer cancel()
	sales, listErr := schema.DrawnSales(ctx, c.db, now.Add(-c.cfg.Tail))
	if listErr != nil && sales == nil {
		return 0, listErr
	}
	live := make(map[int64]bool, len(sales))
	n := 0
	errs := []error{listErr}
	for _, s := range sales {
		if len(c.cfg.Sales) > 0 && !slices.Contains(c.cfg.Sales, s.ID) {
			continue
		}
		live[s.ID] = true
		if c.final[s.ID] {
			continue
		}
		added, _, err := c.Copy(ctx, s, now)
		n += added
		if err != nil {
			errs = append(errs, err)
		}
	}
	for id := range c.held { // past Tail: forgotten
		if !live[id] {
			delete(c.held, id)
			delete(c.told, id)
		}
	}
	for id := range c.final {
		if !live[id] {
			delete(c.final, id)
		}
	}
	return n, errors.Join(errs...)
}

// Copy reads sale s's log in Redis at now and inserts the entries
// PostgreSQL lacks; it returns how many it inserted and what it found. An
// error is a read or write that failed (Redis or PostgreSQL away).
func (c *Copier) Copy(ctx context.Context, s *sale.Sale, now time.Time) (int, Outcome, error) {
	held, seen := c.held[s.ID]
	if !seen {
		var err error
		if held, err = schema.ReadDrawLog(ctx, c.db, s.ID); err != nil {
			return 0, Unchanged, err
		}
		c.held[s.ID] = held
		if c.isFinal(s, held, now) {
			return 0, Final, nil
		}
	}
	entries, err := c.read(ctx, s.ID)
	var bad *badLog
	if errors.As(err, &bad) {
		c.refuse(s.ID, now, bad.err)
		return 0, Refused, nil
	}
	if err != nil {
		return 0, Unchanged, err
	}
	if prefixOf(entries, held) { // nothing new (Redis may hold less: lost, expired)
		c.clear(s.ID)
		if c.isFinal(s, held, now) {
			return 0, Final, nil
		}
		return 0, Unchanged, nil
	}
	// Redis differs from what this writer last knew: compare with what
	// PostgreSQL holds now (another writer may have copied it).
	if held, err = schema.ReadDrawLog(ctx, c.db, s.ID); err != nil {
		return 0, Unchanged, err
	}
	c.held[s.ID] = held
	for i := range min(len(held), len(entries)) {
		if held[i].Hash != entries[i].Hash || string(held[i].Body) != string(entries[i].Body) {
			c.conflict(s.ID, now, &schema.DrawLogConflict{Sale: s.ID, Seq: i, Held: held[i].Hash, Offered: entries[i].Hash, SameHash: held[i].Hash == entries[i].Hash})
			return 0, Conflict, nil
		}
	}
	if len(entries) <= len(held) {
		c.clear(s.ID)
		return 0, Unchanged, nil
	}
	added, err := schema.InsertDrawLog(ctx, c.db, s.ID, entries)
	c.m.DrawLogEntries.Add(float64(added))
	var conflict *schema.DrawLogConflict
	if errors.As(err, &conflict) { // another writer inserted another log in between
		delete(c.held, s.ID)
		c.conflict(s.ID, now, conflict)
		return added, Conflict, nil
	}
	if err != nil {
		delete(c.held, s.ID) // read again next time
		return added, Unchanged, err
	}
	c.held[s.ID] = entries
	c.clear(s.ID)
	if added > 0 {
		c.log.Info("draw log copied to postgresql", "sale", s.ID, "entries", added, "held", len(entries))
	}
	if c.isFinal(s, entries, now) {
		return added, Final, nil
	}
	return added, Copied, nil
}

// badLog is a log Redis holds that is unfit to copy (as opposed to a read
// that failed).
type badLog struct{ err error }

func (b *badLog) Error() string { return b.err.Error() }

// read reads sale saleID's log from Redis, at most MaxEntries + 1 entries,
// and checks it: an error is a *badLog when the log is at fault.
func (c *Copier) read(ctx context.Context, saleID int64) ([]draw.Entry, error) {
	cl := c.redis.Client()
	k := sharding.RoomLogKey(saleID)
	raw, err := cl.Do(ctx, cl.B().Lrange().Key(k).Start(0).Stop(MaxEntries).Build()).AsStrSlice()
	if err != nil {
		if _, ok := rueidis.IsRedisErr(err); ok && !rueidis.IsRedisNil(err) { // WRONGTYPE: not a list
			return nil, &badLog{fmt.Errorf("%s: %w", k, err)}
		}
		return nil, fmt.Errorf("reading the draw log of sale %d (%s): %w", saleID, k, err)
	}
	entries := make([]draw.Entry, len(raw))
	for i, e := range raw {
		if entries[i], err = stock.ParseLogEntry(e); err != nil {
			return nil, &badLog{fmt.Errorf("%s, entry %d: %w", k, i, err)}
		}
	}
	if err := check(saleID, entries); err != nil {
		return nil, &badLog{fmt.Errorf("%s: %w", k, err)}
	}
	return entries, nil
}

// check validates a log read from Redis: its bounds, each body fit to keep
// (UTF-8, one JSON value: draw.CheckLog reads only the first), and the log
// itself (draw.CheckLog).
func check(saleID int64, entries []draw.Entry) error {
	if len(entries) > MaxEntries {
		return fmt.Errorf("more than %d entries", MaxEntries)
	}
	for i, en := range entries {
		switch {
		case len(en.Body) > MaxBody:
			return fmt.Errorf("entry %d: a body of %d bytes, at most %d", i, len(en.Body), MaxBody)
		case !utf8.Valid(en.Body):
			return fmt.Errorf("entry %d: a body that is not UTF-8", i)
		case !json.Valid(en.Body):
			return fmt.Errorf("entry %d: a body that is not one JSON value", i)
		}
	}
	_, err := draw.CheckLog(saleID, entries)
	return err
}

// prefixOf reports whether the checked log a is held, or its beginning:
// held has an entry at a's last sequence number with a's last hash (the
// chain makes every entry before it the same).
func prefixOf(a, held []draw.Entry) bool {
	return len(a) <= len(held) && (len(a) == 0 || a[len(a)-1].Hash == held[len(a)-1].Hash)
}

// isFinal reports whether log, as PostgreSQL holds it, is sale s's final
// log at now, and remembers it: the sale has ended and the last entry is a
// reveal (after an abort, a redraw may still come).
func (c *Copier) isFinal(s *sale.Sale, log []draw.Entry, now time.Time) bool {
	if len(log) == 0 || now.Before(s.EndsAt) {
		return false
	}
	var e struct {
		Event string `json:"event"`
	}
	if json.Unmarshal(log[len(log)-1].Body, &e) != nil || e.Event != draw.EventReveal {
		return false
	}
	c.final[s.ID] = true
	delete(c.held, s.ID)
	delete(c.told, s.ID)
	return true
}

// refuse counts a log that does not check and logs it (thinned per sale).
func (c *Copier) refuse(saleID int64, now time.Time, err error) {
	c.m.DrawLogRefused.Inc()
	c.tell(saleID, now, "draw log in redis does not verify: not copied; postgresql keeps what it holds", err)
}

// conflict counts and logs an entry PostgreSQL holds with another hash.
func (c *Copier) conflict(saleID int64, now time.Time, err error) {
	c.m.DrawLogConflicts.Inc()
	c.tell(saleID, now, "draw log in redis disagrees with postgresql: the entry held is kept, nothing after it is copied", err)
}

// tell logs msg at Error for saleID once per problem, and again every
// repeatlog.Every while it lasts.
func (c *Copier) tell(saleID int64, now time.Time, msg string, err error) {
	text := msg + ": " + err.Error()
	if p, ok := c.told[saleID]; ok && p.msg == text && now.Sub(p.at) < repeatlog.Every {
		return
	}
	c.told[saleID] = problem{msg: text, at: now}
	c.log.Error(msg, "sale", saleID, "err", err)
}

// clear ends saleID's problem, if it had one.
func (c *Copier) clear(saleID int64) {
	if _, ok := c.told[saleID]; ok {
		delete(c.told, saleID)
		c.log.Info("draw log in redis verifies again", "sale", saleID)
	}
}
