package stock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"flashsale/sharding"
	"flashsale/sharding/sale"
)

// Resharding: changing a sale's shard count S before or during the sale.
//
//  1. A journal (sharding.ReshardKey) records the old and the new tags; only one
//     reshard of a sale runs at a time (SET NX).
//  2. Every old shard is fenced (sharding.AppendFenceKey). From then on every
//     script refuses to change it, with an answer of its own: a purchase's
//     reserve is the outcome Frozen and a pay or cancel's verdict ActFrozen
//     (the gateway answers 503 and reloads the sale; the client's retry goes
//     to the new layout), a void is VoidFrozen (the gateway's queue voids
//     again on the new layout), and the writer's releases (ReleaseFrozen),
//     status writes and persisted marks (ErrFrozen) and expiry claims
//     (ClaimFrozen) are retried on the new layout. Moves journaled on old
//     shards are finished (forced past the fence).
//  3. The frozen state is copied to the new shards, which nobody else knows yet:
//     each item's total over the old shards is split evenly over the new ones,
//     every buyer record goes to the user's home shard under the new count, and
//     every order record follows its owner. Copying overwrites, so a resumed
//     reshard copies again from the same frozen state with the same result.
//  4. The sale's description is stored with the new tags and Version+1: from
//     here the new shards are live and the journal says "published".
//  5. The old shards' keys are deleted; their fences stay for a day so a gateway
//     with a stale description keeps being told to reload.
//
// Every write of a reshard (its journal, the fences, the drop; the copy by
// its last writes and a read-back, see copyShards) is acknowledged by a
// replica when the Store has a Batcher (flashctl's has): a failover right
// after a step cannot undo it unseen. A write whose WAIT fails
// stops the reshard with ErrUnconfirmed; running the same command again
// resumes it from its journal (or starts it anew, if the failover lost the
// journal: the fences and the copy are written again the same way).
//
// Units and buyers are conserved exactly: between the fence and the publish no
// script changes either layout. The cost is a short window (the copy: about a
// millisecond per few hundred keys, plus the gateways' reload interval) in
// which purchases of the sale answer 503.

type reshardJournal struct {
	SaleID  int64    `json:"saleId"`
	From    []string `json:"from"`
	To      []string `json:"to"`
	Version int64    `json:"version"` // of the published description
	Phase   string   `json:"phase"`   // "copying", then "published"
}

// FenceTTL is how long the fences of replaced shards stay.
const FenceTTL = 24 * time.Hour

// LayoutGrace is how long a reshard keeps the old shards after it published
// the new layout: the gateways load sales every second (their catalog), and
// a request routed by the old layout meanwhile must still find its order.
const LayoutGrace = 2 * time.Second

// ErrReshardRunning is returned when another reshard of the sale is under way.
var ErrReshardRunning = errors.New("a reshard of this sale is already running (or crashed: resume it with the same command)")

// ReshardReport says what a reshard did.
type ReshardReport struct {
	From, To      int
	Units         map[int64]int64 // item -> units moved to the new layout
	Buyers        int
	Orders        int
	MovesFinished int
	Resumed       bool
	Frozen        time.Duration // how long purchases of the sale were refused
}

// Reshard changes sale saleID to n shards placed over top's masters. It resumes
// a reshard that crashed (its journal names the target; n must match).
func (s *Store) Reshard(ctx context.Context, saleID int64, n int, top *sharding.Topology) (*sale.Sale, ReshardReport, error) {
	rep := ReshardReport{To: n, Units: map[int64]int64{}}
	sale, err := s.LoadSale(ctx, saleID)
	if err != nil {
		return nil, rep, err
	}
	rep.From = len(sale.Shards)
	j, err := s.loadJournal(ctx, saleID)
	if err != nil {
		return nil, rep, err
	}
	if j == nil {
		if n == len(sale.Shards) {
			return sale, rep, nil
		}
		if j, err = s.startReshard(ctx, sale, n, top); err != nil {
			return nil, rep, err
		}
	} else if err := j.resume(sale, n, &rep); err != nil {
		return nil, rep, err
	}
	began := time.Now()
	// In phase "published" the sale read above already has the new layout.
	if j.Phase == "copying" {
		if sale, err = s.publishReshard(ctx, sale, j, top, &rep); err != nil {
			return nil, rep, err
		}
	}
	rep.Frozen = time.Since(began)
	// The old shards' records stay readable while the gateways' catalogs
	// still name them: a GET, pay or cancel there until their next refresh
	// finds the order (a pay meets the fence and is answered 503, then sent
	// to the new layout) instead of a false 404.
	select {
	case <-time.After(LayoutGrace):
	case <-ctx.Done():
		return nil, rep, ctx.Err()
	}
	if err := s.dropShards(ctx, sale, j.From, top); err != nil {
		return nil, rep, err
	}
	if err := s.doAck(ctx, s.c.B().Del().Key(sharding.ReshardKey(saleID)).Build()).Error(); err != nil {
		return nil, rep, fmt.Errorf("removing reshard journal: %w", err)
	}
	return sale, rep, nil
}

// startReshard places n new tags for sale over top's masters and writes the
// journal that names them, in phase "copying" (step 1). The journal is
// written with NX, so that only one reshard of a sale runs at a time: one
// already there is ErrReshardRunning.
func (s *Store) startReshard(ctx context.Context, sale *sale.Sale, n int, top *sharding.Topology) (*reshardJournal, error) {
	to, err := sharding.PlaceTagsVersion(sale.ID, sale.Version+1, n, top)
	if err != nil {
		return nil, err
	}
	j := &reshardJournal{SaleID: sale.ID, From: sale.Shards, To: to, Version: sale.Version + 1, Phase: "copying"}
	b, _ := json.Marshal(j)
	ok, err := s.doAck(ctx, s.c.B().Set().Key(sharding.ReshardKey(sale.ID)).Value(string(b)).Nx().Build()).ToString()
	if rueidis.IsRedisNil(err) || (err == nil && ok != "OK") {
		return nil, ErrReshardRunning
	}
	if err != nil {
		return nil, fmt.Errorf("writing reshard journal: %w", err)
	}
	return j, nil
}

// resume takes up the unfinished reshard j of sale, noting in rep that it is
// resumed and what it reshards from. A resumed reshard must target n shards,
// as the crashed one did: a different count is ErrReshardRunning.
func (j *reshardJournal) resume(sale *sale.Sale, n int, rep *ReshardReport) error {
	rep.Resumed = true
	if len(j.To) != n {
		return fmt.Errorf("%w: it targets %d shards, not %d", ErrReshardRunning, len(j.To), n)
	}
	rep.From = len(j.From)
	if j.Phase == "copying" && slices.Equal(sale.Shards, j.To) {
		// The description went out with the new layout and the journal
		// was not updated after it (a crash, or that write unconfirmed):
		// the new shards are live, and copying the frozen old ones over
		// them again would bring back every unit sold since.
		j.Phase = "published"
	}
	return nil
}

// publishReshard runs steps 2 to 4 of the reshard j of sale: it fences the old
// shards, finishes the moves journaled on them, copies them to the new ones,
// stores the description with the new tags and moves the journal to phase
// "published". It returns the published sale; until the journal says
// "published" a failure leaves a reshard that the same command resumes.
func (s *Store) publishReshard(ctx context.Context, sale *sale.Sale, j *reshardJournal, top *sharding.Topology, rep *ReshardReport) (*sale.Sale, error) {
	if err := s.fence(ctx, j.From, j.Version); err != nil {
		return nil, err
	}
	var err error
	if rep.MovesFinished, err = s.recoverMoves(ctx, j.From, true); err != nil {
		return nil, fmt.Errorf("finishing moves before the copy: %w", err)
	}
	if err := s.copyShards(ctx, sale, j, top, rep); err != nil {
		return nil, err
	}
	next := *sale
	next.Shards, next.Version = j.To, j.Version
	if err := s.StoreSale(ctx, &next); err != nil {
		return nil, err
	}
	j.Phase = "published"
	b, _ := json.Marshal(j)
	if err := s.doAck(ctx, s.c.B().Set().Key(sharding.ReshardKey(sale.ID)).Value(string(b)).Build()).Error(); err != nil {
		return nil, fmt.Errorf("updating reshard journal: %w", err)
	}
	return &next, nil
}

// PendingReshard is a reshard of a sale that has not finished: under way, or
// stopped (a crash, an unconfirmed write) until the same command is run again.
type PendingReshard struct {
	From  int    `json:"from"`  // shards before
	To    int    `json:"to"`    // shards after
	Phase string `json:"phase"` // "copying" (purchases answer 503 once the old shards are fenced) or "published"
}

// PendingReshard returns the sale's unfinished reshard, nil when there is none.
func (s *Store) PendingReshard(ctx context.Context, saleID int64) (*PendingReshard, error) {
	j, err := s.loadJournal(ctx, saleID)
	if err != nil || j == nil {
		return nil, err
	}
	return &PendingReshard{From: len(j.From), To: len(j.To), Phase: j.Phase}, nil
}

func (s *Store) loadJournal(ctx context.Context, saleID int64) (*reshardJournal, error) {
	b, err := s.c.Do(ctx, s.c.B().Get().Key(sharding.ReshardKey(saleID)).Build()).AsBytes()
	if rueidis.IsRedisNil(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading reshard journal: %w", err)
	}
	var j reshardJournal
	if err := json.Unmarshal(b, &j); err != nil || len(j.To) == 0 || len(j.From) == 0 {
		return nil, fmt.Errorf("reshard journal of sale %d is malformed: %s", saleID, b)
	}
	return &j, nil
}

func (s *Store) fence(ctx context.Context, tags []string, version int64) error {
	cmds := make(rueidis.Commands, 0, len(tags))
	for _, tag := range tags {
		cmds = append(cmds, s.c.B().Set().Key(string(sharding.AppendFenceKey(nil, tag))).Value(strconv.FormatInt(version, 10)).Ex(FenceTTL).Build())
	}
	if err := s.doAckAll(ctx, cmds); err != nil {
		return fmt.Errorf("fencing old shards: %w", err)
	}
	return nil
}

// shardOrders lists the order record keys of the shard with tag, from the
// master that serves its slot. Every key of a shard lives in the tag's slot,
// so CLUSTER GETKEYSINSLOT reads only that slot's keys (a master's whole
// keyspace can be millions of keys: a SCAN of it took seconds per shard);
// without cluster mode it falls back to SCAN.
func (s *Store) shardOrders(ctx context.Context, tag string, top *sharding.Topology) ([]string, error) {
	node, ok := s.c.Nodes()[top.MasterOfTag(tag)]
	if !ok {
		return nil, fmt.Errorf("no connection to master %s of shard %s", top.MasterOfTag(tag), tag)
	}
	pattern := sharding.AppendOrderPattern(nil, tag)
	prefix := string(pattern[:len(pattern)-1]) // without the '*'
	slot := int64(sharding.Slot(pattern))
	n, err := node.Do(ctx, node.B().ClusterCountkeysinslot().Slot(slot).Build()).AsInt64()
	if err == nil {
		all, err := node.Do(ctx, node.B().ClusterGetkeysinslot().Slot(slot).Count(n+1).Build()).AsStrSlice()
		if err != nil {
			return nil, fmt.Errorf("listing orders of shard %s: %w", tag, err)
		}
		keys := all[:0]
		for _, k := range all {
			if strings.HasPrefix(k, prefix) {
				keys = append(keys, k)
			}
		}
		return keys, nil
	}
	var keys []string
	var cursor uint64
	for {
		e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(string(pattern)).Count(1000).Build()).AsScanEntry()
		if err != nil {
			return nil, fmt.Errorf("scanning orders of shard %s: %w", tag, err)
		}
		keys = append(keys, e.Elements...)
		if cursor = e.Cursor; cursor == 0 {
			return keys, nil
		}
	}
}

// copied is what a copy wrote to one new shard, for copyCheck to read back.
type copied struct {
	buyers  int64    // fields of its buyers record
	entries int64    // entries appended to its hand-off journal
	orders  []string // its order record keys
}

// copyShards copies the frozen old shards to the new ones. The copy goes in
// one pipeline, in order (an order record's EXPIRE after its HSET, journal
// entries in their old order), and the new shards' stock keys are written
// last, acknowledged by a replica: a master's replica that has those has
// everything the master wrote before them. A failover between the copy and
// those writes could still drop the copy on a promoted replica that then
// takes the stock keys, so the copy is read back from the masters that
// acknowledged them (copyCheck).
func (s *Store) copyShards(ctx context.Context, sale *sale.Sale, j *reshardJournal, top *sharding.Topology, rep *ReshardReport) error {
	stockCmds, err := s.copyStock(ctx, sale, j, rep)
	if err != nil {
		return err
	}
	var cmds rueidis.Commands
	want := make(map[string]*copied, len(j.To))
	for _, tag := range j.To {
		want[tag] = &copied{}
		// Nobody knows the new shards yet: a resumed copy writes their
		// journal and its marks anew (UNLINK: a partial copy of any size
		// is freed off Redis's main thread).
		cmds = append(cmds, s.c.B().Unlink().Key(string(sharding.AppendEventsKey(nil, tag)), string(sharding.AppendTakenKey(nil, tag)),
			string(sharding.AppendFenceMarksKey(nil, tag)), string(sharding.AppendChainKey(nil, tag)),
			string(sharding.AppendPersistedKey(nil, tag))).Build())
	}
	jc, err := s.copyJournals(ctx, sale.ID, j.From, j.To, want)
	if err != nil {
		return err
	}
	cmds = append(cmds, jc.cmds...)
	for _, tag := range j.To {
		// The new shard's watermarks speak only for entries of its own
		// journal: an order naming an older one (trimmed from an old
		// journal, so in Kafka, not yet known to be in PostgreSQL) is
		// persisted by its own mark.
		cmds = append(cmds, s.c.B().Hset().Key(string(sharding.AppendPersistedKey(nil, tag))).FieldValue().
			FieldValue(PersistedSince, jc.since).Build())
	}
	marks, err := s.copyFenceMarks(ctx, j.From, j.To)
	if err != nil {
		return err
	}
	cmds = append(cmds, marks...)
	for _, tag := range j.From {
		// The old shard's persisted watermarks name entries of its own
		// journal: the copies of the orders they cover carry the mark.
		marks, err := s.c.Do(ctx, s.c.B().Hgetall().Key(string(sharding.AppendPersistedKey(nil, tag))).Build()).AsStrMap()
		if err != nil {
			return fmt.Errorf("reading persisted watermarks of %s: %w", tag, err)
		}
		if cmds, err = s.copyBuyers(ctx, sale.ID, tag, j.To, want, jc.renamed[tag], marks, cmds, rep); err != nil {
			return err
		}
		if cmds, err = s.copyOrders(ctx, sale.ID, tag, j.To, top, want, jc.renamed[tag], marks, cmds, rep); err != nil {
			return err
		}
	}
	if sale.State != "" {
		for _, tag := range j.To {
			cmds = append(cmds, s.c.B().Set().Key(string(sharding.AppendHaltKey(nil, tag))).Value(sale.State).Build())
		}
	}
	if err := firstErr(s.c.DoMulti(ctx, cmds...)); err != nil {
		return fmt.Errorf("copying to new shards: %w", err)
	}
	if err := s.doAckAll(ctx, stockCmds); err != nil {
		return fmt.Errorf("copying stock to new shards: %w", err)
	}
	return s.copyCheck(ctx, want)
}

// copyStock returns the writes of each item's units, its total over the old
// shards split evenly over the new ones.
func (s *Store) copyStock(ctx context.Context, sl *sale.Sale, j *reshardJournal, rep *ReshardReport) (rueidis.Commands, error) {
	old := &sale.Sale{ID: sl.ID, Shards: j.From}
	var cmds rueidis.Commands
	for _, it := range sl.Items {
		rem, err := s.Remaining(ctx, old, it.ID)
		if err != nil {
			return nil, err
		}
		var total int64
		for _, r := range rem {
			total += r
		}
		rep.Units[it.ID] = total
		for i, q := range sharding.Split(total, len(j.To)) {
			cmds = append(cmds, s.c.B().Set().Key(string(sharding.AppendStockKey(nil, j.To[i], it.ID))).Value(strconv.FormatInt(q, 10)).Build())
		}
	}
	return cmds, nil
}

// copyBuyers appends to cmds the writes that move old shard tag's buyer
// records to their users' new home shards. A buyer record that carries its
// order (lua/order.lua) names the reservation's journal entry as copyOrders
// names a record's, and is marked persisted when the old shard's watermark
// of its item (marks) covers that entry.
func (s *Store) copyBuyers(ctx context.Context, saleID int64, tag string, to []string, want map[string]*copied, renamed, marks map[string]string, cmds rueidis.Commands, rep *ReshardReport) (rueidis.Commands, error) {
	buyers, err := s.c.Do(ctx, s.c.B().Hgetall().Key(string(sharding.AppendBuyersKey(nil, tag))).Build()).AsStrMap()
	if err != nil {
		return nil, fmt.Errorf("reading buyers of %s: %w", tag, err)
	}
	for user, v := range buyers {
		u, err := strconv.ParseUint(user, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("buyers of %s hold user %q", tag, user)
		}
		if f := strings.Split(v, "|"); len(f) == 9 {
			if wm := marks[f[1]]; wm != "" && sharding.EntryAtOrBefore(f[4], wm) {
				f[8] = "1"
			}
			if n, ok := renamed[f[4]]; ok {
				f[4] = n
			}
			v = strings.Join(f, "|")
		}
		dst := to[sharding.HomeShard(u, saleID, len(to))]
		cmds = append(cmds, s.c.B().Hset().Key(string(sharding.AppendBuyersKey(nil, dst))).FieldValue().FieldValue(user, v).Build())
		want[dst].buyers++
		rep.Buyers++
	}
	return cmds, nil
}

// copyOrders appends to cmds the writes that move old shard tag's order
// records, with their time to live, to their owners' new home shards.
//
// A record whose reservation entry ('j') or pay or cancel entry ('qj') went
// to the new journal names it by its new id (renamed): a void there undoes
// it when it went untaken, and answers that it stands when it was taken
// (the new journal's watermark is at the last taken copy); and GET calls it
// persisted only once its copy, which may be its only way to PostgreSQL (a
// relay took it while Kafka was down), is held. A record whose entry the
// old journal no longer held (trimmed: Kafka has it) keeps its old id,
// which the new shard's watermarks do not speak for (PersistedSince).
// A record whose reservation entry the old shard's persisted watermark of its
// item (marks) covers is marked persisted.
func (s *Store) copyOrders(ctx context.Context, saleID int64, tag string, to []string, top *sharding.Topology, want map[string]*copied, renamed, marks map[string]string, cmds rueidis.Commands, rep *ReshardReport) (rueidis.Commands, error) {
	keys, err := s.shardOrders(ctx, tag, top)
	if err != nil {
		return nil, err
	}
	reads := make(rueidis.Commands, 0, 2*len(keys))
	for _, k := range keys {
		reads = append(reads, s.c.B().Hgetall().Key(k).Build(), s.c.B().Ttl().Key(k).Build())
	}
	res := s.c.DoMulti(ctx, reads...)
	for i, k := range keys {
		m, err := res[2*i].AsStrMap()
		if err != nil {
			return nil, fmt.Errorf("reading order %s: %w", k, err)
		}
		ttl, err := res[2*i+1].AsInt64()
		if err != nil || len(m) == 0 {
			continue // expired meanwhile
		}
		u, err1 := strconv.ParseUint(m["user"], 10, 64)
		id, ok := sharding.ParseOrderID([]byte(k[len(k)-36:]))
		if err1 != nil || !ok {
			return nil, fmt.Errorf("order record %s is malformed", k)
		}
		dst := to[sharding.HomeShard(u, saleID, len(to))]
		nk := string(sharding.AppendOrderKey(nil, dst, id))
		fv := s.c.B().Hset().Key(nk).FieldValue()
		if wm := marks[m["item"]]; wm != "" && sharding.EntryAtOrBefore(m["j"], wm) {
			m["p"] = "1" // the old shard's watermark covered it
		}
		for f, v := range m {
			if n, ok := renamed[v]; ok && (f == "j" || f == "qj") {
				v = n
			}
			fv = fv.FieldValue(f, v)
		}
		cmds = append(cmds, fv.Build())
		if ttl > 0 {
			cmds = append(cmds, s.c.B().Expire().Key(nk).Seconds(ttl).Build())
		}
		want[dst].orders = append(want[dst].orders, nk)
		rep.Orders++
	}
	return cmds, nil
}

// copyCheck reads the copy back from the new shards' masters: every buyer
// record field, every journal entry and every order record. A
// shortfall means a failover lost part of the copy: the reshard stops, and
// running it again copies again from the frozen old shards.
func (s *Store) copyCheck(ctx context.Context, want map[string]*copied) error {
	for tag, w := range want {
		cmds := rueidis.Commands{s.c.B().Hlen().Key(string(sharding.AppendBuyersKey(nil, tag))).Build(),
			s.c.B().Xlen().Key(string(sharding.AppendEventsKey(nil, tag))).Build()}
		if len(w.orders) > 0 {
			cmds = append(cmds, s.c.B().Exists().Key(w.orders...).Build())
		}
		res := s.c.DoMulti(ctx, cmds...)
		var got [3]int64
		for i, r := range res {
			n, err := r.AsInt64()
			if err != nil {
				return fmt.Errorf("reading back the copy to %s: %w", tag, err)
			}
			got[i] = n
		}
		if got[0] != w.buyers || got[1] != w.entries || got[2] != int64(len(w.orders)) {
			return fmt.Errorf("%w: the copy to %s reads back %d buyers, %d journal entries, %d orders, where %d, %d and %d were written (a failover during the copy?); run the reshard again",
				ErrUnconfirmed, tag, got[0], got[1], got[2], w.buyers, w.entries, len(w.orders))
		}
	}
	return nil
}

// journalCopy is the old shards' hand-off journals as the copy writes them
// to the new shards.
type journalCopy struct {
	cmds rueidis.Commands
	// renamed maps, per old tag, the id of each entry to its id in the new
	// journal.
	renamed map[string]map[string]string
	// since is the first id of every new journal.
	since string
}

// copyJournals returns the writes that append the hand-off journal entries
// of the old shards from to the journals of their users' new home shards.
//
// A void must still find, on the new shard, an entry that no relay had
// taken: its gateway may be cut off from the old master with the void
// queued, its fence mark holding the old shard's relays back (the relay
// takes nothing more from a frozen shard, see relay.lua). So the entries
// get new ids, the taken ones first: each new journal holds the taken
// entries (read again by its relay, which Kafka may get twice; the writer
// deduplicates), its watermark at the last of them, then the untaken ones,
// which its relay takes only past the hold and the fence marks (copied by
// copyFenceMarks). The records name every copy by its new id (copyOrders).
// The new ids all carry one millisecond after every old entry's, with
// sequence numbers in that order, so no old id is ever a new one.
func (s *Store) copyJournals(ctx context.Context, saleID int64, from, to []string, want map[string]*copied) (journalCopy, error) {
	type entry struct {
		tag   string
		e     rueidis.XRangeEntry
		taken bool
	}
	jc := journalCopy{renamed: make(map[string]map[string]string, len(from))}
	byDst := make(map[string][]entry, len(to))
	base := time.Now().UnixMilli()
	for _, tag := range from {
		res := s.c.DoMulti(ctx, s.c.B().Xrange().Key(string(sharding.AppendEventsKey(nil, tag))).Start("-").End("+").Build(),
			s.c.B().Get().Key(string(sharding.AppendTakenKey(nil, tag))).Build())
		arr, err := res[0].AsXRange()
		if err != nil {
			return jc, fmt.Errorf("reading hand-off journal of %s: %w", tag, err)
		}
		mark, err := res[1].ToString()
		if rueidis.IsRedisNil(err) {
			mark, err = "", nil
		}
		if err != nil {
			return jc, fmt.Errorf("reading relay watermark of %s: %w", tag, err)
		}
		if mark != "" && !sharding.ValidEntryID(mark) {
			return jc, fmt.Errorf("relay watermark of %s is %q, not an entry id", tag, mark)
		}
		jc.renamed[tag] = map[string]string{}
		for _, e := range arr {
			u, err := strconv.ParseUint(e.FieldValues["u"], 10, 64)
			ms, _, ok := sharding.ParseEntryID(e.ID)
			if err != nil || !ok || ms >= math.MaxInt64 {
				return jc, fmt.Errorf("hand-off journal of %s: entry %q has user %q", tag, e.ID, e.FieldValues["u"])
			}
			base = max(base, int64(ms)+1)
			dst := to[sharding.HomeShard(u, saleID, len(to))]
			taken := mark != "" && sharding.EntryAtOrBefore(e.ID, mark)
			byDst[dst] = append(byDst[dst], entry{tag: tag, e: e, taken: taken})
		}
	}
	for dst, es := range byDst {
		// Taken first; each old journal's entries stay in their order.
		slices.SortStableFunc(es, func(a, b entry) int {
			switch {
			case a.taken == b.taken:
				return 0
			case a.taken:
				return -1
			}
			return 1
		})
		last := ""
		for k, e := range es {
			id := strconv.FormatInt(base, 10) + "-" + strconv.Itoa(k)
			fv := s.c.B().Xadd().Key(string(sharding.AppendEventsKey(nil, dst))).Id(id).FieldValue()
			for _, f := range []string{"t", "o", "s", "i", "u", "c", "x", "at"} {
				if v, ok := e.e.FieldValues[f]; ok {
					fv = fv.FieldValue(f, v)
				}
			}
			jc.cmds = append(jc.cmds, fv.Build())
			if e.taken {
				last = id
			}
			jc.renamed[e.tag][e.e.ID] = id
			want[dst].entries++
		}
		if last != "" {
			jc.cmds = append(jc.cmds, s.c.B().Set().Key(string(sharding.AppendTakenKey(nil, dst))).Value(last).Build())
		}
	}
	jc.since = strconv.FormatInt(base, 10) + "-0"
	return jc, nil
}

// copyFenceMarks returns the writes that give every new shard the gateways'
// fence marks of the old ones, each gateway's oldest: a gateway cut off
// from an old shard's master, with a void for it queued, holds the new
// shards' relays back as it held the old one's, until its void has landed
// (on the new layout) and it beats again, or its mark is old enough to be
// taken for a gateway gone.
func (s *Store) copyFenceMarks(ctx context.Context, from, to []string) (rueidis.Commands, error) {
	oldest := map[string]int64{}
	for _, tag := range from {
		m, err := s.c.Do(ctx, s.c.B().Hgetall().Key(string(sharding.AppendFenceMarksKey(nil, tag))).Build()).AsStrMap()
		if err != nil {
			return nil, fmt.Errorf("reading fence marks of %s: %w", tag, err)
		}
		for id, v := range m {
			at, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("fence marks of %s: gateway %s has %q, not a time", tag, id, v)
			}
			if cur, ok := oldest[id]; !ok || at < cur {
				oldest[id] = at
			}
		}
	}
	if len(oldest) == 0 {
		return nil, nil
	}
	var cmds rueidis.Commands
	for _, tag := range to {
		fv := s.c.B().Hset().Key(string(sharding.AppendFenceMarksKey(nil, tag))).FieldValue()
		for id, at := range oldest {
			fv = fv.FieldValue(id, strconv.FormatInt(at, 10))
		}
		cmds = append(cmds, fv.Build())
	}
	return cmds, nil
}

func (s *Store) dropShards(ctx context.Context, sale *sale.Sale, tags []string, top *sharding.Topology) error {
	var cmds rueidis.Commands
	for _, tag := range tags {
		for _, it := range sale.Items {
			cmds = append(cmds, s.c.B().Del().Key(string(sharding.AppendStockKey(nil, tag, it.ID))).Build())
		}
		cmds = append(cmds,
			s.c.B().Del().Key(string(sharding.AppendBuyersKey(nil, tag))).Build(),
			s.c.B().Del().Key(string(sharding.AppendJournalKey(nil, tag))).Build(),
			s.c.B().Del().Key(string(sharding.AppendEventsKey(nil, tag))).Build(),
			s.c.B().Del().Key(string(sharding.AppendTakenKey(nil, tag))).Build(),
			s.c.B().Del().Key(string(sharding.AppendRelayMarkKey(nil, tag))).Build(),
			s.c.B().Del().Key(string(sharding.AppendFenceMarksKey(nil, tag))).Build(),
			s.c.B().Del().Key(string(sharding.AppendHaltKey(nil, tag))).Build(),
			s.c.B().Del().Key(string(sharding.AppendPersistedKey(nil, tag))).Build(),
			s.c.B().Del().Key(string(sharding.AppendChainKey(nil, tag))).Build())
		keys, err := s.shardOrders(ctx, tag, top)
		if err != nil {
			return err
		}
		for _, k := range keys {
			cmds = append(cmds, s.c.B().Del().Key(k).Build())
		}
	}
	if err := s.doAckAll(ctx, cmds); err != nil {
		return fmt.Errorf("removing old shards: %w", err)
	}
	return nil
}
