// Package stock runs the stock scripts of package lua against a Redis Cluster
// through rueidis, over the key layout of package sharding. Gateways reserve and
// release with it, the writer records statuses and releases, and the ops tool
// preloads and inspects.
//
// Business outcomes (reserved, sold out, already purchased) are Result values;
// an error means Redis did not answer as the scripts promise (unreachable,
// timed out, or a script refused its input) and, for Reserve, that the caller
// cannot know whether the unit was taken: it settles that by replaying the
// same order id, which the script treats as idempotent.
//
// A Store is safe for concurrent use; every call is one round trip through
// rueidis's auto-pipelining, so concurrent calls share network writes.
package stock

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"flashsale/lua"
	"flashsale/sharding"
)

// ErrFrozen means the shard is frozen by a reshard: reload the sale (its new
// layout is published within moments) and retry there. Nothing was changed.
// The writes that have no outcome to put it in return it (moves, status,
// persisted marks, compare-and-set, dropping a buyer record); the others
// answer a frozen shard as an outcome value (Frozen, VoidFrozen, ActFrozen,
// ReleaseFrozen, ClaimFrozen), and their errors mean only failures.
var ErrFrozen = errors.New("shard frozen by a reshard")

// Outcome is the business result of a reservation attempt: the reply code of
// reserve.lua and reserve_many.lua, whose "reply" header lines name each
// code (TestReplyCodesMatchTheScripts checks the two lists agree).
type Outcome uint8

// Outcomes of Reserve, numbered as the scripts' reply codes.
const (
	// SoldOut: the shard has no unit of the item left.
	SoldOut Outcome = iota
	// Reserved: one unit is now held for the order id in Result.OrderID.
	Reserved
	// AlreadyPurchased: the user holds another active order in the sale,
	// Result.OrderID.
	AlreadyPurchased
	// IDUsed: the order id was reserved before and has since been released; a
	// retried request with an old Idempotency-Key gets this.
	IDUsed
	// Frozen: a reshard fences the shard; nothing was changed. Reload the
	// sale's layout and retry there.
	Frozen
	// JournalFull: the shard's hand-off journal holds its bound of entries
	// (the relay cannot reach Kafka); nothing was written.
	JournalFull
	// Paused and Ended: an operator paused or ended the sale (the shard's
	// halt key, see sharding.AppendHaltKey); no reservation was made, but a
	// borrow's credit arrived.
	Paused
	Ended
	// numOutcomes bounds the reply codes decodeReserve accepts.
	numOutcomes
)

// outcomeNames are the scripts' names of the reply codes.
var outcomeNames = [numOutcomes]string{
	SoldOut: "SOLD_OUT", Reserved: "RESERVED", AlreadyPurchased: "ALREADY_PURCHASED", IDUsed: "ID_USED",
	Frozen: "FROZEN", JournalFull: "JOURNAL_FULL", Paused: "PAUSED", Ended: "ENDED",
}

func (o Outcome) String() string {
	if o < numOutcomes {
		return outcomeNames[o]
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// Holds reports whether the outcome names an order (Result.OrderID): a
// reservation, the order the user holds, or the used order id.
func (o Outcome) Holds() bool { return o == Reserved || o == AlreadyPurchased || o == IDUsed }

// Credited reports whether a Reservation's Credit reached the shard: the
// script credits it once past its fence and journal checks (Frozen and
// JournalFull change nothing), before it looks at the buyer, the halt key or
// the stock.
func (o Outcome) Credited() bool { return o != Frozen && o != JournalFull }

// Result is what Reserve decided.
type Result struct {
	Outcome Outcome
	OrderID sharding.OrderID // reserved or held order, zero when sold out
	// Left is the units left on the shard after a reservation, or -1 when the
	// script did not look (a replay or a refusal).
	Left int64
	// Replay is true when the reservation already existed under this order id.
	Replay bool
	// Acked is the number of replicas that acknowledged the write, -1 when
	// not asked (see Batcher.SetAcks).
	Acked int64
}

// Store runs the stock scripts. Create it with New.
type Store struct {
	c     rueidis.Client
	batch *Batcher
}

// New returns a Store over c, a cluster (or single-node) rueidis client.
func New(c rueidis.Client) *Store { return &Store{c: c} }

// script is a Lua script with its SHA-1 (rueidis.Lua keeps its own to
// itself; the batched calls need it).
type script struct {
	src, sha string
	lua      *rueidis.Lua
}

func newScript(src string) script {
	return script{src: src, sha: sha1Hex(src), lua: rueidis.NewLuaScript(src)}
}

// The scripts that write (see the lua package for each).
var (
	reserveScript   = newScript(lua.Reserve)
	releaseScript   = newScript(lua.Release)
	statusScript    = newScript(lua.Status)
	voidScript      = newScript(lua.Void)
	actScript       = newScript(lua.Act)
	voidActScript   = newScript(lua.VoidAct)
	claimScript     = newScript(lua.ExpireClaim)
	persistedScript = newScript(lua.Persisted)
	upToScript      = newScript(lua.PersistedUpTo)
	moveOutScript   = newScript(lua.MoveOut)
	moveInScript    = newScript(lua.MoveIn)
	casScript       = newScript(lua.CAS)
	dropBuyerScript = newScript(lua.DropBuyer)
)

func sha1Hex(script string) string { return fmt.Sprintf("%x", sha1.Sum([]byte(script))) }

// HotScripts are the scripts the purchase path runs by SHA-1 (EVALSHA); the
// gateway loads them on every master before it calls itself ready.
var HotScripts = []string{lua.Reserve, joinedSrc, lua.Void, lua.Act, lua.VoidAct}

// SetBatcher sends the Store's writes, each as an acknowledged write (see
// Batcher.DoAck and evalAck), and its buyer-record reads (Holder) through b.
// Call it before the Store is used.
func (s *Store) SetBatcher(b *Batcher) { s.batch = b }

// Client returns the underlying rueidis client.
func (s *Store) Client() rueidis.Client { return s.c }

// DefaultJournalBound is the journal bound of a Reservation or ActRequest
// that names none.
const DefaultJournalBound = 50000

func bound(n int) int {
	if n <= 0 {
		return DefaultJournalBound
	}
	return n
}

// Reservation names one purchase attempt.
type Reservation struct {
	Tag     string // the user's home shard's hash tag
	SaleID  int64
	ItemID  int64
	UserID  uint64
	OrderID sharding.OrderID
	// Attempt is unique per request (a void names the attempt it undoes).
	Attempt uint64
	Created time.Time
	Expires time.Time     // end of the payment window
	TTL     time.Duration // how long the order record lives in Redis
	// Bound is the most entries the shard's journal may hold (0:
	// DefaultJournalBound).
	Bound int
	// Credit, when Units > 0, is a borrow's move (taken from a donor by
	// move_out) credited to the shard in the same script, before the
	// reservation, at most once per move id.
	Credit Credit
}

// Credit is a journaled move's units arriving with a reservation.
type Credit struct {
	MoveID string
	Units  int64
}

// Reserve runs reserve.lua for r: one round trip (plus the replicas'
// acknowledgement, see Batcher.SetAcks). Every answer of the script is an
// Outcome; an error (transport, timeout, an unconfirmed write, a reply that
// breaks the protocol) leaves the outcome unknown, and the caller settles it
// with Void.
func (s *Store) Reserve(ctx context.Context, r Reservation) (Result, error) {
	// The seven keys and the order id share one allocation: the order key
	// ends with the id's text.
	var buf [400]byte
	b := sharding.AppendStockKey(buf[:0], r.Tag, r.ItemID)
	k1 := len(b)
	b = sharding.AppendBuyersKey(b, r.Tag)
	k2 := len(b)
	b = sharding.AppendOrderKey(b, r.Tag, r.OrderID)
	k3 := len(b)
	b = sharding.AppendFenceKey(b, r.Tag)
	k4 := len(b)
	b = sharding.AppendEventsKey(b, r.Tag)
	k5 := len(b)
	if r.Credit.Units > 0 {
		b = sharding.AppendMoveKey(b, r.Tag, r.Credit.MoveID)
	} else {
		b = sharding.AppendNoMoveKey(b, r.Tag)
	}
	k6 := len(b)
	b = sharding.AppendHaltKey(b, r.Tag)
	all := string(b)
	keys := []string{all[:k1], all[k1:k2], all[k2:k3], all[k3:k4], all[k4:k5], all[k5:k6], all[k6:]}
	oid := all[k3-36 : k3]
	args := []string{
		strconv.FormatUint(r.UserID, 10), oid, strconv.FormatInt(r.ItemID, 10),
		strconv.FormatInt(r.Created.UnixMilli(), 10), strconv.FormatInt(r.Expires.UnixMilli(), 10),
		strconv.FormatInt(int64(ttlSeconds(r.TTL)), 10), strconv.FormatInt(r.SaleID, 10),
		strconv.Itoa(bound(r.Bound)), strconv.FormatUint(r.Attempt, 10),
		strconv.FormatInt(r.Credit.Units, 10), r.Credit.MoveID, strconv.Itoa(int(MoveMarkerTTL / time.Second)),
	}
	rr, acked := s.evalAck(ctx, reserveScript, keys, args, true)
	arr, err := rr.ToArray()
	if err != nil {
		return Result{}, fmt.Errorf("reserving stock: %w", err)
	}
	res, err := decodeReserve(arr)
	if err != nil {
		return res, fmt.Errorf("reserving stock: %w", err)
	}
	res.Acked = acked
	return res, nil
}

// evalAck runs a writing script through the Batcher as an acknowledged
// write (EVALSHA, falling back to one EVAL on NOSCRIPT), or through rueidis
// alone without a Batcher. join marks a reserve.lua call the Batcher may join
// with others (Batcher.DoReserve). Every write of the stock goes through it,
// so that with a Batcher a write the master answered and a failover then lost
// comes back as an error (ErrUnconfirmed), never as a success.
func (s *Store) evalAck(ctx context.Context, sc script, keys, args []string, join bool) (rueidis.RedisResult, int64) {
	if s.batch == nil {
		return sc.lua.Exec(ctx, s.c, keys, args), -1
	}
	var rr rueidis.RedisResult
	var acked int64
	if join {
		rr, acked = s.batch.DoReserve(ctx, keys, args)
	} else {
		rr, acked = s.batch.DoAck(ctx, s.c.B().Evalsha().Sha1(sc.sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
	}
	if rerr, ok := rueidis.IsRedisErr(rr.Error()); ok && rerr.IsNoScript() {
		// A node without the script (restarted, or a new master): EVAL runs
		// and loads it, in one round trip. NOSCRIPT means the EVALSHA ran
		// nothing, so this is not a second attempt.
		rr, acked = s.batch.DoAck(ctx, s.c.B().Eval().Script(sc.src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
	}
	return rr, acked
}

// doAck sends a plain write as an acknowledged one through the Batcher, or
// through rueidis alone without a Batcher.
func (s *Store) doAck(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if s.batch == nil {
		return s.c.Do(ctx, cmd)
	}
	rr, _ := s.batch.DoAck(ctx, cmd)
	return rr
}

// Holder reads the buyers record of userID on tag's shard, the user's home
// shard: the order the user holds in the sale, found false when none. It is a
// single HGET, a fraction of the reserve script's cost in Redis; the gateway
// uses it for a repeat click of a buyer it has answered before, where the
// script would only find this record and answer ALREADY_PURCHASED (see
// reserve.lua). Unlike the script it ignores a reshard fence: a buyer record
// on a frozen shard is frozen too, and still names the order the user holds.
func (s *Store) Holder(ctx context.Context, tag string, userID uint64) (sharding.OrderID, bool, error) {
	var kb [96]byte
	var ub [20]byte
	cmd := s.c.B().Hget().Key(string(sharding.AppendBuyersKey(kb[:0], tag))).Field(string(strconv.AppendUint(ub[:0], userID, 10))).Build()
	if s.batch != nil {
		return parseHolder(s.batch.Do(ctx, cmd))
	}
	return parseHolder(s.c.Do(ctx, cmd))
}

func parseHolder(r rueidis.RedisResult) (sharding.OrderID, bool, error) {
	held, err := r.ToString()
	if rueidis.IsRedisNil(err) {
		return sharding.OrderID{}, false, nil
	}
	if err != nil {
		return sharding.OrderID{}, false, fmt.Errorf("reading buyer record: %w", err)
	}
	head, _, _ := strings.Cut(held, "|") // the order it names (lua/order.lua)
	id, ok := sharding.ParseOrderID([]byte(head))
	if !ok {
		return sharding.OrderID{}, false, fmt.Errorf("reading buyer record: malformed order id %q", held)
	}
	return id, true, nil
}

func decodeReserve(arr []rueidis.RedisMessage) (Result, error) {
	if len(arr) != 3 {
		return Result{}, fmt.Errorf("reply has %d elements, want 3", len(arr))
	}
	code, err1 := arr[0].AsInt64()
	id, err2 := arr[1].ToString()
	left, err3 := arr[2].AsInt64()
	if err := errors.Join(err1, err2, err3); err != nil {
		return Result{}, fmt.Errorf("malformed reply: %w", err)
	}
	if code < 0 || code >= int64(numOutcomes) {
		return Result{}, fmt.Errorf("unknown reply code %d", code)
	}
	r := Result{Outcome: Outcome(code), Left: left}
	if !r.Outcome.Holds() {
		return r, nil
	}
	r.Replay = r.Outcome == Reserved && left < 0
	oid, ok := sharding.ParseOrderID([]byte(id))
	if !ok {
		return Result{}, fmt.Errorf("reply holds a malformed order id %q", id)
	}
	r.OrderID = oid
	return r, nil
}

// Release statuses: the final status written to the order record, or
// ReleaseDelete to remove the record (a hand-off that never reached a client).
const (
	StatusPending   = "PENDING"
	StatusPaid      = "PAID"
	StatusExpired   = "EXPIRED"
	StatusCancelled = "CANCELLED"
	StatusFailed    = "FAILED"
	ReleaseDelete   = "-"
	// StatusVoid marks the record of a purchase attempt undone before its
	// client heard of it (void.lua): no order.
	StatusVoid = "VOID"
)

// ReleaseOutcome is what Release did.
type ReleaseOutcome int8

// Outcomes of Release, numbered as the replies of release.lua.
const (
	// ReleaseNothing: the order no longer held a unit (a second release, or
	// an order the user replaced); nothing was changed.
	ReleaseNothing ReleaseOutcome = 0
	// Released: the unit went back to the stock, by this call alone.
	Released ReleaseOutcome = 1
	// ReleaseFrozen: a reshard fences the shard; nothing was changed.
	// Release again on the sale's new layout.
	ReleaseFrozen ReleaseOutcome = -1
)

func (o ReleaseOutcome) String() string {
	switch o {
	case ReleaseNothing:
		return "nothing to release"
	case Released:
		return "released"
	case ReleaseFrozen:
		return "frozen"
	}
	return "release(" + strconv.Itoa(int(o)) + ")"
}

// Release gives the unit held by order id back to the item's stock on tag's
// shard, at most once: it answers Released only to the call that returned
// it, ReleaseNothing to the others, and ReleaseFrozen while a reshard fences
// the shard. An error means the outcome is unknown (Redis unreachable, the
// write unconfirmed, a malformed reply); a release again is safe.
func (s *Store) Release(ctx context.Context, tag string, itemID int64, userID uint64, id sharding.OrderID, status string) (ReleaseOutcome, error) {
	keys := []string{
		string(sharding.AppendStockKey(nil, tag, itemID)),
		string(sharding.AppendBuyersKey(nil, tag)),
		string(sharding.AppendOrderKey(nil, tag, id)),
		string(sharding.AppendFenceKey(nil, tag)),
	}
	rr, _ := s.evalAck(ctx, releaseScript, keys, []string{strconv.FormatUint(userID, 10), id.String(), status}, false)
	n, err := rr.AsInt64()
	if err != nil {
		return 0, fmt.Errorf("releasing stock: %w", err)
	}
	switch {
	case n < 0:
		return ReleaseFrozen, nil
	case n == 1:
		return Released, nil
	}
	return ReleaseNothing, nil
}

// Topology reads the cluster's masters and their slots with CLUSTER SLOTS,
// asking the known nodes in turn until one answers: a node that is down (a
// dead replica, a master being replaced) must not make the reading fail,
// nor may one that hangs with its connection open (a stalled or frozen
// node): each node but the last is given at most half of the time left (a
// second without a deadline), and the node that answered last is asked
// first. An error reply (a Redis that is no cluster member) is an answer.
func Topology(ctx context.Context, c rueidis.Client) (*sharding.Topology, error) {
	nodes := c.Nodes()
	addrs := slices.Sorted(maps.Keys(nodes))
	if last, ok := lastAnswered.Load().(string); ok {
		if i := slices.Index(addrs, last); i > 0 {
			addrs[0], addrs[i] = addrs[i], addrs[0]
		}
	}
	err := errors.New("no node known")
	for i, addr := range addrs {
		n, nctx, cancel := nodes[addr], ctx, context.CancelFunc(func() {})
		if i < len(addrs)-1 {
			wait := time.Second // a caller without a deadline
			if d, ok := ctx.Deadline(); ok {
				wait = time.Until(d) / 2
			}
			nctx, cancel = context.WithTimeout(ctx, wait)
		}
		var arr []rueidis.RedisMessage
		arr, err = n.Do(nctx, n.B().ClusterSlots().Build()).ToArray()
		cancel()
		if err == nil {
			lastAnswered.Store(addr)
			return parseSlots(arr)
		}
		if _, answered := rueidis.IsRedisErr(err); answered || ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("reading cluster slots: %w", err)
}

// lastAnswered is the address of the node whose CLUSTER SLOTS Topology read
// last. It only orders the nodes asked: a client that does not know the
// address (another cluster, a test's own Redis) asks in sorted order.
var lastAnswered atomic.Value

// parseSlots reads a CLUSTER SLOTS reply.
func parseSlots(arr []rueidis.RedisMessage) (*sharding.Topology, error) {
	byAddr := map[string]*sharding.Master{}
	var order []string
	for _, e := range arr {
		f, err := e.ToArray()
		if err != nil || len(f) < 3 {
			return nil, fmt.Errorf("reading cluster slots: malformed entry")
		}
		first, err1 := f[0].AsInt64()
		last, err2 := f[1].AsInt64()
		node, err3 := f[2].ToArray()
		if err := errors.Join(err1, err2, err3); err != nil || len(node) < 2 {
			return nil, fmt.Errorf("reading cluster slots: malformed entry: %v", err)
		}
		host, _ := node[0].ToString()
		port, _ := node[1].AsInt64()
		addr := host + ":" + strconv.FormatInt(port, 10)
		m := byAddr[addr]
		if m == nil {
			m = &sharding.Master{Addr: addr}
			byAddr[addr] = m
			order = append(order, addr)
		}
		m.Slots = append(m.Slots, sharding.SlotRange{First: uint16(first), Last: uint16(last)})
	}
	masters := make([]sharding.Master, 0, len(order))
	for _, a := range order {
		masters = append(masters, *byAddr[a])
	}
	return sharding.NewTopology(masters)
}

// doAckAll sends cmds, each an acknowledged write through the Batcher (all
// at once), or in one pipeline without a Batcher, and returns the first
// error.
func (s *Store) doAckAll(ctx context.Context, cmds rueidis.Commands) error {
	return firstErr(s.doAckEach(ctx, cmds))
}

// doAckEach is doAckAll with the result of each command.
func (s *Store) doAckEach(ctx context.Context, cmds rueidis.Commands) []rueidis.RedisResult {
	if s.batch == nil {
		return s.c.DoMulti(ctx, cmds...)
	}
	res := make([]rueidis.RedisResult, len(cmds))
	var wg sync.WaitGroup
	for i, cmd := range cmds {
		wg.Go(func() { res[i] = s.doAck(ctx, cmd) })
	}
	wg.Wait()
	return res
}

func firstErr(rs []rueidis.RedisResult) error {
	for _, r := range rs {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
}
