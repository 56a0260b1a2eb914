// Package room is a sale's waiting room or raffle, shared by every gateway
// through Redis and served by each gateway from a local copy of its state.
// "Room" names this code and its keys only, for both access modes (see the
// glossary in package sharding/sale).
//
// The life of a sale in access mode queue or raffle (SPEC "The front door"
// and "Fair access"):
//
//   - Entries: a queue's entries open PreQueue before the start (at the
//     start when PreQueue is 0) and close StartWindow after the start
//     (default 2 s); a raffle's entries run over its registration window,
//     which closes before the start. Everyone who asks in that time is an
//     entrant: room_join.lua keeps the user's first nonce, so a user
//     enters once however often they ask. Clicking first gains nothing.
//   - The draw (drawn.go): once entries close the entrants are frozen under
//     a Merkle root, then the seed committed at the sale's creation is
//     revealed and each entrant's place is the rank of their keyed draw
//     (package draw). Anyone can check it (GET .../draw, .../draw/me).
//   - After a queue's entries close, arrivals join the end: the n-th late
//     arrival takes place D + n, n from one INCR on the waiting room's tail
//     counter (D the entrants). A raffle takes no late arrivals
//     (ENTRIES_CLOSED).
//   - Admission starts Grace after the close, not before the start, and
//     moves a cursor: places up to the cursor are admitted (the ticket
//     endpoint hands them a purchase ticket). The cursor advances at
//     remaining units x AdmitFactor places per second, held while the sale
//     is sold out, and never passes the last place taken. A raffle admits
//     no place past its units: those are told NOT_SELECTED at the reveal,
//     and after a sell-out still (it is final; SOLD_OUT is for the places
//     that returned stock may still reach).
//   - Queued users see their place and their chance of a unit (odds.go).
//
// Keys (package sharding) and who touches them: the entrants are spread over
// sharding.RoomEntrantsShards hashes on their own slots, one room_join.lua
// call per user per sale (through Config.Acks: a replica has the entry before
// its 202, as it has a purchase) (the peak is the start: the crowd is split
// over 16 slots on every master). The tail counter, the state hash and the
// seed share one slot: the tail takes one INCR per late user per sale; the
// state is read and advanced by every gateway's tick (room_tick.lua, atomic,
// so concurrent ticks never advance twice for the same time), every Interval
// (100 ms): G gateways cost 10 G calls per second, whatever the crowd. Polls
// never touch Redis: a queued user holds a signed pass (drawn, or its tail
// number), and once the entrants are frozen each gateway knows every
// entrant (then, revealed, their place), with or without a pass. While the
// entries are open a gateway also counts the entrants, 16 HLENs (for
// positions shown before the draw and for the final count): once a second,
// and every tick from a second before the close until the count is final.
package room

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"flashsale/gateway/internal/mac"
	"flashsale/lua"
	"flashsale/sharding"
	"flashsale/sharding/draw"
	"flashsale/sharding/draw/beacon"
	"flashsale/sharding/repeatlog"
	"flashsale/sharding/sale"
)

// Grace is the time between the close of the entries and the first
// admission: every join that started before the close has finished by then
// (a join is bounded by the request budget) and the entrants' count is
// final.
const Grace = 500 * time.Millisecond

// DefaultInterval is the default tick of a gateway's admission state.
const DefaultInterval = 100 * time.Millisecond

// Sale is what this package needs of a sale with a waiting room or a raffle.
type Sale struct {
	ID               int64
	Start, End       time.Time
	PreQueue, Window time.Duration // a queue's
	Factor           float64       // admissions per second per remaining unit
	// Raffle: entries from EntriesOpen to EntriesClose, admission from
	// Start, and nobody past place Units is ever admitted (NOT_SELECTED).
	Raffle                    bool
	EntriesOpen, EntriesClose time.Time
	Units                     int64 // the sale's units over all items
	// Commitment is the SHA-256 of the draw's seed published at the sale's
	// creation; nil when the sale has none.
	Commitment *draw.Hash
	// Chain and Round are the beacon round that seals the draw (nil, 0: the
	// seed alone); HeadKey is the public key of its tree head (hex).
	Chain   *beacon.Chain
	Round   uint64
	HeadKey string
}

// Sealed reports whether a beacon round seals s's draw.
func (s *Sale) Sealed() bool { return s.Chain != nil && s.Round != 0 }

// FromSale returns s's waiting room or raffle, or false when s has neither
// (access mode open).
func FromSale(s *sale.Sale) (Sale, bool) {
	mode := s.Mode()
	if mode == sale.AccessOpen {
		return Sale{}, false
	}
	out := Sale{ID: s.ID, Start: s.StartsAt, End: s.EndsAt, Factor: sale.DefaultAdmitFactor,
		Window: sale.DefaultStartWindow, Units: s.Quantity()}
	if r := s.WaitingRoom; r != nil {
		out.PreQueue, out.Window, out.Factor = time.Duration(r.PreQueue), r.Window(), r.Factor()
	}
	if mode == sale.AccessRaffle && s.Raffle != nil {
		out.Raffle, out.EntriesOpen, out.EntriesClose = true, s.Raffle.EntriesOpen, s.Raffle.EntriesClose
	}
	if d := s.Draw; d != nil {
		if h, err := draw.ParseHash(d.Commitment); err == nil {
			out.Commitment = &h
		}
		if c, err := beacon.ByHash(d.Chain); err == nil && d.Round != 0 {
			out.Chain, out.Round, out.HeadKey = c, d.Round, d.HeadKey
		}
	}
	return out, true
}

// Opens returns when the entries open: a raffle's registration window,
// else the pre-queue (the start when there is none).
func (s *Sale) Opens() time.Time {
	if s.Raffle {
		return s.EntriesOpen
	}
	return s.Start.Add(-s.PreQueue)
}

// Closes returns when the entries close: a raffle's registration window's
// end, else the start window's end.
func (s *Sale) Closes() time.Time {
	if s.Raffle {
		return s.EntriesClose
	}
	return s.Start.Add(s.Window)
}

// AdmitsFrom returns when admission starts: Grace after the entries close,
// and not before the start.
func (s *Sale) AdmitsFrom() time.Time {
	if t := s.Closes().Add(Grace); t.After(s.Start) {
		return t
	}
	return s.Start
}

// State is a sale's admission state as one tick read it. It is immutable.
type State struct {
	Cursor   int64 // places admitted so far
	Entrants int64 // entrants counted (final once Final)
	Final    bool
	Tail     int64     // late arrivals
	At       time.Time // the gateway's clock at the tick
	// Frozen is the draw once frozen (then revealed), as this gateway
	// computed and checked it; nil before.
	Frozen *Frozen
}

// Acker sends a write and answers once the replicas acknowledged it
// (stock.Batcher.DoAck): an entry told 202 must survive a failover.
type Acker interface {
	DoAck(ctx context.Context, cmd rueidis.Completed) (rueidis.RedisResult, int64)
}

// Config tunes a Room.
type Config struct {
	Ring *mac.Ring // signs and checks passes; required
	// Acks, when set, carries the entries and the late arrivals' places
	// (the writes a 202 QUEUED promises) and waits for the replicas; nil
	// sends them plainly (a single Redis, tests).
	Acks Acker
	// Beacon gives the rounds that seal the draws (checked before use);
	// nil takes them from drand's public relays.
	Beacon   beacon.Source
	Interval time.Duration // tick, default DefaultInterval
	Timeout  time.Duration // bound of a tick's Redis calls, default 1s
	Log      *slog.Logger
}

// Room is one gateway's side of every waiting room and raffle: the tick that
// shares the state through Redis, and the local copy polls are answered
// from. It is safe for concurrent use; only Tick (one goroutine) writes.
type Room struct {
	c   rueidis.Client
	cfg Config
	// Beacons counts the sealed draws' troubles, for the metrics.
	Beacons BeaconStats
	rooms   atomic.Pointer[map[int64]*atomic.Pointer[State]]
	// counts is each sale's last count of entrants while its entries can
	// still change, and when it was read; only Tick touches it.
	counts map[int64]entrantCount
	// frozen is each sale's frozen (then revealed) draw, busy the sales
	// whose freeze runs, freezes where those report; only Tick touches the
	// maps.
	frozen  map[int64]*Frozen
	busy    map[int64]bool
	freezes chan freezeResult
}

type entrantCount struct {
	n  int64
	at time.Time
}

// countEvery is how often the entrants are counted while the entries are
// far from closing (positions shown in a long pre-queue need no more); near
// the close, and until the count is final, every tick counts them.
const countEvery = time.Second

var (
	joinScript = rueidis.NewLuaScript(lua.RoomJoin)
	tickScript = rueidis.NewLuaScript(lua.RoomTick)
)

// New returns a Room over the cluster client c.
func New(c rueidis.Client, cfg Config) (*Room, error) {
	if cfg.Ring == nil {
		return nil, errors.New("room: a key ring for the passes is required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Beacon == nil {
		cfg.Beacon = &beacon.Fetcher{Relays: beacon.DefaultRelays}
	}
	r := &Room{c: c, cfg: cfg, counts: map[int64]entrantCount{}, frozen: map[int64]*Frozen{}, busy: map[int64]bool{},
		freezes: make(chan freezeResult, 16)}
	r.rooms.Store(&map[int64]*atomic.Pointer[State]{})
	return r, nil
}

// State returns the last state read for sale, or nil before its first tick.
func (r *Room) State(saleID int64) *State {
	if p := (*r.rooms.Load())[saleID]; p != nil {
		return p.Load()
	}
	return nil
}

// Source lists the sales with a waiting room or raffle and their remaining
// units (in the gateway, the catalog).
type Source interface {
	Rooms() []Sale
	// Remaining returns the sale's units left over all items, or -1 when not read yet.
	Remaining(saleID int64) int64
}

// Run ticks every Interval until ctx ends.
func (r *Room) Run(ctx context.Context, src Source) {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	var fails repeatlog.Failure
	for {
		fails.Round(ctx, r.cfg.Log, r.Tick(ctx, time.Now(), src), "admission tick")
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// live reports whether s needs ticking at now: from a little before its
// entries open (so the first joins find a state) to the end of the sale.
func live(s *Sale, now time.Time) bool {
	return !now.Before(s.Opens().Add(-2*time.Second)) && now.Before(s.End)
}

// Tick counts the entrants while the entries are open, then advances and
// reads the state of every live sale in one pipelined batch.
func (r *Room) Tick(ctx context.Context, now time.Time, src Source) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	var sales []Sale
	for _, s := range src.Rooms() {
		if live(&s, now) {
			sales = append(sales, s)
		}
	}
	r.track(sales)
	if len(sales) == 0 {
		return nil
	}
	entrants, err := r.countEntrants(ctx, now, sales)
	if err != nil {
		return err
	}
	ferr := r.freezeDue(now, sales)
	execs := make([]rueidis.LuaExec, len(sales))
	for i := range sales {
		s := &sales[i]
		final := "0"
		if !now.Before(s.AdmitsFrom()) {
			final = "1"
		}
		rem := src.Remaining(s.ID)
		if f := r.frozen[s.ID]; rem < 0 || now.Before(s.Start) || f == nil || !f.Revealed {
			// Nobody has a place before this gateway's reveal (a sealed
			// draw waits for its beacon round): the cursor holds, and
			// moves from the reveal on without a burst.
			rem = 0
		}
		execs[i] = rueidis.LuaExec{
			Keys: []string{sharding.RoomStateKey(s.ID), sharding.RoomTailKey(s.ID)},
			Args: []string{ms(s.AdmitsFrom()), strconv.FormatInt(entrants[i], 10), final,
				strconv.FormatInt(rem, 10), strconv.FormatFloat(s.Factor, 'g', -1, 64), ms(s.End.Add(time.Hour))},
		}
	}
	rooms := *r.rooms.Load()
	for i, res := range tickScript.ExecMulti(ctx, r.c, execs...) {
		st, err := parseTick(res)
		if err != nil {
			return fmt.Errorf("admission state of sale %d: %w", sales[i].ID, err)
		}
		st.At, st.Frozen = now, r.frozen[sales[i].ID]
		rooms[sales[i].ID].Store(st)
	}
	return ferr
}

// freezeDue collects the freezes that ended since the last tick, starts one
// for every sale whose entries closed FreezeAfter ago and whose draw this
// gateway has not revealed yet, and returns the first error of those that
// ended. A freeze runs beside the ticks, under FreezeTimeout: reading the
// entrants of a big draw must not hold up every sale's state.
func (r *Room) freezeDue(now time.Time, sales []Sale) error {
	var first error
	for done := false; !done; {
		select {
		case res := <-r.freezes:
			delete(r.busy, res.sale)
			if res.err != nil && first == nil {
				first = res.err
			}
			if res.f != nil {
				if prev := r.frozen[res.sale]; res.f.Revealed && (prev == nil || !prev.Revealed) {
					r.cfg.Log.Info("draw revealed", "sale", res.sale, "entrants", res.f.Count, "root", res.f.Root.String(), "committed", res.f.Committed)
				}
				r.frozen[res.sale] = res.f
			}
		default:
			done = true
		}
	}
	var overdue int64
	for i := range sales {
		s := sales[i]
		prev := r.frozen[s.ID]
		if prev != nil && prev.Beacon == nil && s.Sealed() && now.After(s.Chain.TimeOf(s.Round).Add(BeaconGrace)) {
			overdue++
		}
		if r.busy[s.ID] || now.Before(s.Closes().Add(FreezeAfter)) || prev.waitsForItsRound(&s, now) {
			continue
		}
		if prev != nil && prev.Revealed {
			// Revealed: only the log may still lack a step (an append that
			// failed) or gain one (an operator's abort).
			if !r.logDue(&s, prev, now) {
				continue
			}
			r.busy[s.ID] = true
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), FreezeTimeout)
				defer cancel()
				f := prev.clone()
				r.syncLog(ctx, &s, f)
				r.freezes <- freezeResult{sale: s.ID, f: f}
			}()
			continue
		}
		r.busy[s.ID] = true
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), FreezeTimeout)
			defer cancel()
			f, err := r.freeze(ctx, &s, prev)
			r.freezes <- freezeResult{sale: s.ID, f: f, err: err}
		}()
	}
	r.Beacons.Overdue.Store(overdue)
	return first
}

// FreezeTimeout bounds one freeze: reading every entrant, the root, the
// script.
const FreezeTimeout = 30 * time.Second

type freezeResult struct {
	sale int64
	f    *Frozen
	err  error
}

// track makes sure every live sale has a state slot; the map is replaced,
// never changed, so polls read it without a lock.
func (r *Room) track(sales []Sale) {
	old := *r.rooms.Load()
	same := len(old) == len(sales)
	for i := 0; same && i < len(sales); i++ {
		same = old[sales[i].ID] != nil
	}
	if same {
		return
	}
	next := make(map[int64]*atomic.Pointer[State], len(sales))
	for _, s := range sales {
		if p := old[s.ID]; p != nil {
			next[s.ID] = p
		} else {
			next[s.ID] = &atomic.Pointer[State]{}
		}
	}
	r.rooms.Store(&next)
	for id := range r.frozen {
		if next[id] == nil {
			delete(r.frozen, id)
		}
	}
}

// countEntrants returns the count of each sale's entrants, read while it can
// still change (a final count is kept by the state hash and not read again),
// every tick near the close and every countEvery before.
func (r *Room) countEntrants(ctx context.Context, now time.Time, sales []Sale) ([]int64, error) {
	out := make([]int64, len(sales))
	var cmds rueidis.Commands
	var owner []int
	for i := range sales {
		s := &sales[i]
		if st := r.State(s.ID); st != nil && st.Final {
			delete(r.counts, s.ID)
			continue
		}
		last, seen := r.counts[s.ID]
		out[i] = last.n
		if seen && now.Sub(last.at) < countEvery && now.Before(s.Closes().Add(-countEvery)) {
			continue
		}
		for k := 0; k < sharding.RoomEntrantsShards; k++ {
			cmds = append(cmds, r.c.B().Hlen().Key(sharding.RoomEntrantsKey(s.ID, k)).Build())
			owner = append(owner, i)
		}
		out[i] = 0
	}
	if len(cmds) == 0 {
		return out, nil
	}
	for j, res := range r.c.DoMulti(ctx, cmds...) {
		n, err := res.AsInt64()
		if err != nil {
			return nil, fmt.Errorf("counting the entrants of sale %d: %w", sales[owner[j]].ID, err)
		}
		out[owner[j]] += n
	}
	for _, i := range owner {
		r.counts[sales[i].ID] = entrantCount{n: out[i], at: now}
	}
	return out, nil
}

func parseTick(res rueidis.RedisResult) (*State, error) {
	v, err := res.ToArray()
	if err != nil {
		return nil, fmt.Errorf("room_tick: %w", err)
	}
	if len(v) != 5 {
		return nil, fmt.Errorf("room_tick: malformed reply of %d elements, want 5", len(v))
	}
	var n [5]int64
	for i := range v {
		if n[i], err = v[i].AsInt64(); err != nil {
			return nil, fmt.Errorf("room_tick: malformed reply element %d: %w", i, err)
		}
	}
	if n[0] < 0 || n[1] < 0 || n[3] < 0 || (n[2] != 0 && n[2] != 1) {
		return nil, fmt.Errorf("room_tick: malformed reply %v", n)
	}
	return &State{Cursor: n[0], Entrants: n[1], Final: n[2] == 1, Tail: n[3]}, nil
}

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// rate returns the admissions per second of s with rem units left.
func rate(s *Sale, rem int64) float64 {
	return math.Max(float64(max(rem, 1))*s.Factor, 0.01)
}
