package stock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"flashsale/sharding"
	"flashsale/sharding/sale"
)

// The hand-off: every change a client is told 202 about (a reservation, a pay
// or cancel request) is journaled, in the same script, in the shard's events
// stream (sharding.AppendEventsKey), which the relay (package journal) moves
// to Kafka. A purchase whose answer could not be given in time is undone by
// Void before the client is told 503, so that the 503 is true.

// VoidOutcome is what Void and VoidAct found.
type VoidOutcome int8

// Outcomes of Void and VoidAct, numbered as the replies of void.lua and
// void_act.lua.
const (
	// VoidNothing: the order id is held by another attempt or finished.
	VoidNothing VoidOutcome = 0
	// Voided: the attempt had reserved; its unit and journal entry are gone.
	Voided VoidOutcome = 1
	// VoidStands: the attempt had reserved and a relay already took its
	// event: the order stands.
	VoidStands VoidOutcome = 2
	// VoidFenced: the attempt had not run; a late run of it will be refused.
	VoidFenced VoidOutcome = 3
	// VoidFrozen: the void did not run, a reshard fences the shard; nothing
	// was changed. Void again on the sale's new layout, as after a void
	// that could not reach Redis: until then the attempt is unsettled.
	VoidFrozen VoidOutcome = -1
)

// voidNames are void.lua's and void_act.lua's names of the outcomes from 0
// up; VoidFrozen is their FROZEN.
var voidNames = [...]string{VoidNothing: "NOTHING", Voided: "VOIDED", VoidStands: "STANDS", VoidFenced: "FENCED"}

func (o VoidOutcome) String() string {
	switch o {
	case VoidNothing:
		return "nothing to undo"
	case Voided:
		return "voided"
	case VoidStands:
		return "stands"
	case VoidFenced:
		return "fenced"
	case VoidFrozen:
		return "frozen"
	}
	return "void(" + strconv.Itoa(int(o)) + ")"
}

// decodeVoid decodes a reply of void.lua or void_act.lua.
func decodeVoid(rr rueidis.RedisResult) (VoidOutcome, error) {
	n, err := rr.AsInt64()
	switch {
	case err != nil:
		return 0, err
	case n == int64(VoidFrozen):
		return VoidFrozen, nil
	case n < 0 || n >= int64(len(voidNames)):
		return 0, fmt.Errorf("unknown reply %d", n)
	}
	return VoidOutcome(n), nil
}

// VoidTTL is how long the VOID record of an undone attempt stays: far longer
// than a late script can take to arrive.
const VoidTTL = time.Hour

// Void undoes attempt r.Attempt of r's order, or makes sure it never takes
// effect (see void.lua). It is idempotent; after it returns Voided,
// VoidFenced or VoidNothing no order will come of the attempt; after
// VoidFrozen nothing is settled yet. An error means the outcome is unknown
// (Redis unreachable, the write unconfirmed, a malformed reply).
func (s *Store) Void(ctx context.Context, r Reservation) (VoidOutcome, error) {
	keys := []string{
		string(sharding.AppendStockKey(nil, r.Tag, r.ItemID)),
		string(sharding.AppendBuyersKey(nil, r.Tag)),
		string(sharding.AppendOrderKey(nil, r.Tag, r.OrderID)),
		string(sharding.AppendFenceKey(nil, r.Tag)),
		string(sharding.AppendEventsKey(nil, r.Tag)),
		string(sharding.AppendTakenKey(nil, r.Tag)),
	}
	args := []string{strconv.FormatUint(r.UserID, 10), r.OrderID.String(), strconv.FormatUint(r.Attempt, 10),
		strconv.Itoa(int(VoidTTL / time.Second))}
	rr, _ := s.evalAck(ctx, voidScript, keys, args, false)
	out, err := decodeVoid(rr)
	if err != nil {
		return 0, fmt.Errorf("voiding attempt: %w", err)
	}
	return out, nil
}

// Act replies (see act.lua).
const (
	ActOK        = "OK"
	ActAgain     = "AGAIN"
	ActNotFound  = "NOTFOUND"
	ActFull      = "FULL"
	ActFrozen    = "FROZEN"
	ActVoided    = "VOIDED"
	ActPay       = "pay"
	ActCancel    = "cancel"
	actExpired   = StatusExpired
	actPaid      = StatusPaid
	actCancelled = StatusCancelled
	actFailed    = StatusFailed
)

// actReplies are the status strings act.lua answers.
var actReplies = [...]string{ActOK, ActAgain, ActNotFound, ActFull, ActFrozen, ActVoided, actExpired, actPaid, actCancelled, actFailed}

// ActRequest is an owner's pay or cancel request.
type ActRequest struct {
	Tag     string // the order's home shard (the owner's)
	Action  string // ActPay or ActCancel
	SaleID  int64
	UserID  uint64
	OrderID sharding.OrderID
	At      time.Time
	Bound   int    // most entries the shard's journal may hold (0: DefaultJournalBound)
	Attempt uint64 // unique per request: VoidAct names the attempt it undoes
}

// Act journals a pay or cancel request after checking it against the order
// record (see act.lua) and returns the script's verdict: ActOK or ActAgain
// (accepted), ActNotFound, a status the order is already past (PAID,
// CANCELLED, EXPIRED, FAILED), ActFull, ActFrozen (a reshard fences the
// shard) or ActVoided (nothing written). An error leaves the outcome
// unknown: VoidAct settles it.
func (s *Store) Act(ctx context.Context, a ActRequest) (string, error) {
	keys := []string{
		string(sharding.AppendOrderKey(nil, a.Tag, a.OrderID)),
		string(sharding.AppendFenceKey(nil, a.Tag)),
		string(sharding.AppendEventsKey(nil, a.Tag)),
		string(sharding.AppendBuyersKey(nil, a.Tag)),
	}
	args := []string{a.Action, strconv.FormatUint(a.UserID, 10), a.OrderID.String(), strconv.FormatInt(a.SaleID, 10),
		strconv.Itoa(bound(a.Bound)), strconv.FormatInt(a.At.UnixMilli(), 10), strconv.FormatUint(a.Attempt, 10)}
	rr, _ := s.evalAck(ctx, actScript, keys, args, false)
	v, err := rr.ToString()
	if err != nil {
		return "", fmt.Errorf("journaling %s: %w", a.Action, err)
	}
	if slices.Contains(actReplies[:], v) {
		return v, nil
	}
	return "", fmt.Errorf("journaling %s: unknown reply %q", a.Action, v)
}

// VoidAct undoes pay or cancel attempt a.Attempt, or makes sure it never
// takes effect (see void_act.lua): Voided (the request taken back),
// VoidStands (a relay took it: the request stands), VoidFenced (the attempt
// had not run), VoidNothing (another attempt, which may have been told 202,
// still holds the request; or no such order) or VoidFrozen (a reshard fences
// the shard: nothing settled, void again on the new layout). It is
// idempotent; after any outcome but VoidStands and VoidFrozen nothing comes
// of the attempt itself. An error means the outcome is unknown.
func (s *Store) VoidAct(ctx context.Context, a ActRequest) (VoidOutcome, error) {
	keys := []string{
		string(sharding.AppendOrderKey(nil, a.Tag, a.OrderID)),
		string(sharding.AppendFenceKey(nil, a.Tag)),
		string(sharding.AppendEventsKey(nil, a.Tag)),
		string(sharding.AppendTakenKey(nil, a.Tag)),
		string(sharding.AppendBuyersKey(nil, a.Tag)),
	}
	args := []string{strconv.FormatUint(a.Attempt, 10), strconv.FormatUint(a.UserID, 10), a.OrderID.String()}
	rr, _ := s.evalAck(ctx, voidActScript, keys, args, false)
	out, err := decodeVoid(rr)
	if err != nil {
		return 0, fmt.Errorf("voiding %s attempt: %w", a.Action, err)
	}
	return out, nil
}

// Claim verdicts of ExpireClaims (see expire_claim.lua).
const (
	ClaimNotDue    int8 = 0
	Claimed        int8 = 1
	ClaimPaid      int8 = 2
	ClaimCancelled int8 = 3
	ClaimFrozen    int8 = -1
	// ClaimFailed: no verdict came (the shard's master unreachable, or the
	// claim's WAIT failed): the order may or may not be claimed, and the
	// next pass claims it again.
	ClaimFailed int8 = -2
)

// ClaimRef names an order for ExpireClaims: its owner's home shard, its
// owner (whose buyer record may hold the order lazily) and its id.
type ClaimRef struct {
	Tag     string
	UserID  uint64
	OrderID sharding.OrderID
}

// ExpireClaims claims each order for expiry on its home shard and returns a
// verdict per order (Claimed, ClaimNotDue, ClaimPaid, ClaimCancelled,
// ClaimFrozen, or ClaimFailed where the call failed: a shard that does not
// answer holds up only its own orders). A reply out of range fails the whole
// call. Without a Batcher it is one pipelined round trip; with one, each
// claim is an acknowledged write (a claim a failover lost would let a pay
// accepted after it stand beside the expiry), all in flight at once.
func (s *Store) ExpireClaims(ctx context.Context, refs []ClaimRef) ([]int8, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	res := make([]rueidis.RedisResult, len(refs))
	keys := func(r ClaimRef) []string {
		return []string{string(sharding.AppendOrderKey(nil, r.Tag, r.OrderID)), string(sharding.AppendFenceKey(nil, r.Tag)),
			string(sharding.AppendBuyersKey(nil, r.Tag))}
	}
	args := func(r ClaimRef) []string {
		return []string{strconv.FormatUint(r.UserID, 10), r.OrderID.String()}
	}
	if s.batch != nil {
		// Each shard's claims have a bound of their own: with one bound
		// for all, the claims of a shard that does not answer would take
		// every place while they wait, and hold up the shards that do.
		byTag := map[string][]int{}
		for i, r := range refs {
			byTag[r.Tag] = append(byTag[r.Tag], i)
		}
		var shards sync.WaitGroup
		for _, idx := range byTag {
			shards.Go(func() {
				var wg sync.WaitGroup
				sem := make(chan struct{}, claimsInFlight)
				for _, i := range idx {
					sem <- struct{}{}
					wg.Go(func() {
						defer func() { <-sem }()
						res[i], _ = s.evalAck(ctx, claimScript, keys(refs[i]), args(refs[i]), false)
					})
				}
				wg.Wait()
			})
		}
		shards.Wait()
	} else {
		cmds := make(rueidis.Commands, 0, len(refs))
		for _, r := range refs {
			cmds = append(cmds, s.c.B().Evalsha().Sha1(claimScript.sha).Numkeys(3).Key(keys(r)...).Arg(args(r)...).Build())
		}
		res = s.c.DoMulti(ctx, cmds...)
		for i, r := range res {
			if rerr, ok := rueidis.IsRedisErr(r.Error()); ok && rerr.IsNoScript() {
				res[i] = claimScript.lua.Exec(ctx, s.c, keys(refs[i]), args(refs[i]))
			}
		}
	}
	out := make([]int8, len(refs))
	for i, r := range res {
		n, err := r.AsInt64()
		if err != nil {
			out[i] = ClaimFailed
			continue
		}
		if n < -1 || n > 3 {
			return nil, fmt.Errorf("claiming orders for expiry: unknown reply %d", n)
		}
		out[i] = int8(n)
	}
	return out, nil
}

// claimsInFlight bounds the claims ExpireClaims has in flight on one shard
// through a Batcher (its batches join them per master).
const claimsInFlight = 64

// LoadScripts loads the purchase path's scripts (HotScripts) on every master
// of the cluster and reports the first failure: a master that does not answer
// or refuses. The gateway is ready only after it succeeded.
func (s *Store) LoadScripts(ctx context.Context) error {
	top, err := Topology(ctx, s.c)
	var nodes []rueidis.Client
	if err != nil {
		nodes = []rueidis.Client{s.c} // a single Redis
	} else {
		all := s.c.Nodes()
		for _, m := range top.Masters {
			n, ok := all[m.Addr]
			if !ok {
				return fmt.Errorf("no connection to master %s", m.Addr)
			}
			nodes = append(nodes, n)
		}
	}
	var errs []error
	for _, n := range nodes {
		cmds := make(rueidis.Commands, 0, len(HotScripts))
		for _, src := range HotScripts {
			cmds = append(cmds, n.B().ScriptLoad().Script(src).Build())
		}
		for _, r := range n.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("loading scripts: %w", err)
	}
	return nil
}

// ServesShards runs a script reading one key of each shard tag (its fence),
// routed as a purchase is, and reports the first shard whose master does not
// serve it: unreachable, still loading its data after a restart (LOADING),
// not yet serving its slots (CLUSTERDOWN: a node refuses every key for its
// first seconds after a start, and while it cannot see most masters), or
// holding back writes (SHUTDOWN pauses every write, scripts included, while
// its replicas catch up, and so does CLIENT PAUSE WRITE). A master can
// answer SCRIPT LOAD and CLUSTER SLOTS in each of those states, and a plain
// read in the last, so neither shows that a purchase would succeed: the
// probe is a script without the no-writes flag, held back exactly as the
// purchase's is.
func (s *Store) ServesShards(ctx context.Context, tags []string) error {
	if len(tags) == 0 {
		return nil
	}
	cmds := make(rueidis.Commands, len(tags))
	for i, tag := range tags {
		cmds[i] = s.c.B().Eval().Script(servesScript).Numkeys(1).Key(string(sharding.AppendFenceKey(nil, tag))).Build()
	}
	for i, r := range s.c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return fmt.Errorf("shard %s: %w", tags[i], err)
		}
	}
	return nil
}

// servesScript is ServesShards' probe: a read, in a script that may write.
const servesScript = "return redis.call('EXISTS', KEYS[1])"

// InJournal reports whether the hand-off journal of the shard with tag still
// holds entry id: its event has not been acknowledged by Kafka yet, so its
// order is in flight, not lost.
func (s *Store) InJournal(ctx context.Context, tag, id string) (bool, error) {
	if id == "" {
		return false, nil
	}
	es, err := s.c.Do(ctx, s.c.B().Xrange().Key(string(sharding.AppendEventsKey(nil, tag))).Start(id).End(id).Build()).ToArray()
	if err != nil {
		return false, fmt.Errorf("reading the journal of %s: %w", tag, err)
	}
	return len(es) > 0, nil
}

// Journals is what the hand-off journals of a sale's shards hold.
type Journals struct {
	Units   map[int64]int64 // reservations per item: left the stock, not yet on their way to PostgreSQL
	Backlog []int64         // entries per shard, in the sale's shard order
	Oldest  []string        // each shard's oldest entry id, "" when its journal is empty
}

// ReadJournals reads the hand-off journals of sale's shards: their backlog,
// their oldest entries, and per item the reservations still in them (the
// drift's "in flight"). An entry whose item does not parse is an error, and
// the backlog and oldest entries are returned with it (Units then misses
// that entry).
func (s *Store) ReadJournals(ctx context.Context, sale *sale.Sale) (Journals, error) {
	cmds := make(rueidis.Commands, len(sale.Shards))
	for i, tag := range sale.Shards {
		cmds[i] = s.c.B().Xrange().Key(string(sharding.AppendEventsKey(nil, tag))).Start("-").End("+").Build()
	}
	out := Journals{Units: map[int64]int64{}, Backlog: make([]int64, len(cmds)), Oldest: make([]string, len(cmds))}
	var bad error
	for i, r := range s.c.DoMulti(ctx, cmds...) {
		entries, err := r.AsXRange()
		if err != nil {
			return Journals{}, fmt.Errorf("reading the hand-off journal of shard %d: %w", i, err)
		}
		out.Backlog[i] = int64(len(entries))
		if len(entries) > 0 {
			out.Oldest[i] = entries[0].ID
		}
		for _, e := range entries {
			if t := e.FieldValues["t"]; t != "r" && t != "reserved" { // a reservation, either version (orderevent.FromFields)
				continue
			}
			item, err := strconv.ParseInt(e.FieldValues["i"], 10, 64)
			if err != nil {
				if bad == nil {
					bad = fmt.Errorf("hand-off journal of shard %d: entry %s has item %q", i, e.ID, e.FieldValues["i"])
				}
				continue
			}
			out.Units[item]++
		}
	}
	return out, bad
}
