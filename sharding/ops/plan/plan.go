package plan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/ops/tool"
	"flashsale/sharding/stock"
)

// PlanInput is what plan works from.
type PlanInput struct {
	// Rate is the target purchase request rate at the gateways, requests/s.
	Rate float64
	// RedisFraction is the share of Rate that runs reserve.lua (0..1]. Once an
	// item (or a user's home shard) is sold out, each gateway answers from its
	// local sold-out flag without Redis, so in a sale of 10,000 units for
	// 500,000 users most requests never reach Redis; 1 (the default) plans for
	// the worst case, in which every request does.
	RedisFraction float64
	// Capacity is what one Redis master runs, in reserve scripts/s. Zero means
	// measure it (Measure).
	Capacity float64
	// Headroom is the share of Capacity a plan may use (default 0.5), leaving
	// the rest for releases, status writes, moves, replication and spikes.
	Headroom float64
	// Masters is the master count; zero reads it from CLUSTER SLOTS.
	Masters int
	// SaleID, when set, places the plan's shards for that sale and shows where
	// each lands.
	SaleID int64
	// MeasureFor is how long each master is measured (default 2 s).
	MeasureFor time.Duration
}

// PlanReport is the outcome of plan: inputs, arithmetic and placement.
type PlanReport struct {
	Rate          float64          `json:"rate"`
	RedisFraction float64          `json:"redisFraction"`
	RedisRate     float64          `json:"redisRate"`
	Capacity      float64          `json:"capacity"`
	Measured      []MasterCapacity `json:"measured,omitempty"`
	Headroom      float64          `json:"headroom"`
	Masters       int              `json:"masters"`
	Usable        float64          `json:"usablePerMaster"`
	MinShards     int              `json:"minShards"`
	Shards        int              `json:"shards"`
	MastersNeeded int              `json:"mastersNeeded"`
	PerMaster     float64          `json:"loadPerMaster"`
	Arithmetic    []string         `json:"arithmetic"`
	Placement     []tool.Placement `json:"placement,omitempty"`
	UnitsPerShard map[int64]int64  `json:"unitsPerShard,omitempty"`
	Warnings      []string         `json:"warnings,omitempty"`
}

// MasterCapacity is one master's measured reserve throughput.
type MasterCapacity struct {
	Master  string  `json:"master"`
	Calls   int64   `json:"calls"`
	Seconds float64 `json:"seconds"`
	PerSec  float64 `json:"callsPerSecond"`
	Errors  int64   `json:"errors"`
}

// Plan computes the shard count for in.Rate and, with in.SaleID, its placement.
//
// The rule: one shard lives on one master, so a master's share of the load is
// its share of the shards. The cluster must give every request that reaches
// Redis (R·f) a master with headroom: R·f / (C·h) masters' worth of capacity.
// S is at least that many (so that the shards can spread over that many masters
// when they are added, without a reshard), at least M, rounded up to a multiple
// of M (so every master carries the same number of shards), and at most
// sharding.MaxShards.
func Plan(ctx context.Context, t *tool.Tool, in PlanInput) (*PlanReport, error) {
	if in.RedisFraction == 0 {
		in.RedisFraction = 1
	}
	if in.Headroom == 0 {
		in.Headroom = 0.5
	}
	if err := in.validate(); err != nil {
		return nil, err
	}
	rep := &PlanReport{Rate: in.Rate, RedisFraction: in.RedisFraction, Headroom: in.Headroom, Capacity: in.Capacity, Masters: in.Masters}
	top, err := planCluster(ctx, t, in, rep)
	if err != nil {
		return nil, err
	}
	rep.arithmetic(in)
	if in.SaleID == 0 || top == nil {
		return rep, nil
	}
	if err := place(ctx, t, in.SaleID, rep, top); err != nil {
		return nil, err
	}
	return rep, nil
}

// validate refuses a PlanInput out of range, naming the flag.
func (in *PlanInput) validate() error {
	switch {
	case !(in.Rate > 0) || math.IsInf(in.Rate, 0):
		return tool.Usagef("plan: --rate must be a positive number of requests/s")
	case !(in.RedisFraction > 0 && in.RedisFraction <= 1):
		return tool.Usagef("plan: --redis-fraction must be in (0, 1]")
	case !(in.Headroom > 0 && in.Headroom <= 1):
		return tool.Usagef("plan: --headroom must be in (0, 1]")
	case in.Capacity < 0 || math.IsInf(in.Capacity, 0) || math.IsNaN(in.Capacity):
		return tool.Usagef("plan: --master-capacity must be a positive number of scripts/s")
	case in.Masters < 0:
		return tool.Usagef("plan: --masters must be positive")
	}
	return nil
}

// planCluster fills in what in leaves to the cluster: the master count from
// CLUSTER SLOTS, the capacity by measuring each master (the slowest counts).
// It returns the topology it read, nil when it needed none.
func planCluster(ctx context.Context, t *tool.Tool, in PlanInput, rep *PlanReport) (*sharding.Topology, error) {
	if in.Masters != 0 && in.Capacity != 0 && in.SaleID == 0 {
		return nil, nil
	}
	if t.Redis == nil {
		return nil, errors.New("plan: needs Redis to read the cluster's masters (or give --masters and --master-capacity)")
	}
	top, err := stock.Topology(ctx, t.Redis)
	if err != nil {
		return nil, err
	}
	if rep.Masters == 0 {
		rep.Masters = len(top.Masters)
	}
	if in.Capacity != 0 {
		return top, nil
	}
	m, err := Measure(ctx, t, top, in.MeasureFor)
	if err != nil {
		return nil, err
	}
	rep.Measured = m
	rep.Capacity = math.Inf(1)
	for _, x := range m {
		rep.Capacity = math.Min(rep.Capacity, x.PerSec)
	}
	if !(rep.Capacity > 0) {
		return nil, errors.New("plan: measuring gave no capacity (every call failed?)")
	}
	return top, nil
}

// arithmetic computes the shard count from the report's inputs, writing
// each step down.
func (rep *PlanReport) arithmetic(in PlanInput) {
	a := func(format string, args ...any) {
		rep.Arithmetic = append(rep.Arithmetic, fmt.Sprintf(format, args...))
	}
	rep.RedisRate = in.Rate * in.RedisFraction
	a("requests reaching Redis   R·f = %s × %g = %s scripts/s", num(in.Rate), in.RedisFraction, num(rep.RedisRate))
	if in.RedisFraction == 1 {
		a("                          (f = 1: planned as if every request ran reserve.lua; the gateways' sold-out flags keep most of a sold-out crowd away from Redis, so f is far lower once the stock is gone)")
	}
	if rep.Measured != nil {
		a("capacity of one master    C = %s scripts/s (slowest of %d measured masters)", num(rep.Capacity), len(rep.Measured))
	} else {
		a("capacity of one master    C = %s scripts/s (given)", num(rep.Capacity))
	}
	rep.Usable = rep.Capacity * in.Headroom
	a("usable per master         C·h = %s × %g = %s scripts/s", num(rep.Capacity), in.Headroom, num(rep.Usable))
	need := int(math.Ceil(rep.RedisRate / rep.Usable))
	rep.MinShards = need
	rep.MastersNeeded = need
	a("shards for the rate       ceil(R·f / C·h) = ceil(%s / %s) = %d", num(rep.RedisRate), num(rep.Usable), need)
	m := rep.Masters
	s := max(need, m)
	s = (s + m - 1) / m * m
	a("spread over masters       max(%d, M=%d) rounded up to a multiple of M = %d", need, m, s)
	if s > sharding.MaxShards {
		a("cap                       min(%d, %d) = %d", s, sharding.MaxShards, sharding.MaxShards/m*m)
		s = sharding.MaxShards / m * m
	}
	rep.Shards = s
	rep.PerMaster = rep.RedisRate / float64(m)
	a("load per master           R·f / M = %s / %d = %s scripts/s (%.0f%% of C, %d shards each)", num(rep.RedisRate), m, num(rep.PerMaster), 100*rep.PerMaster/rep.Capacity, s/m)
	if need > m {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(
			"the cluster is too small: %s scripts/s needs %d masters with headroom %g, it has %d; add masters (the %d shards spread over up to %d masters without a reshard)",
			num(rep.RedisRate), need, in.Headroom, m, s, s))
	}
}

// place shows where the plan's shards of sale id land, and the units each
// would hold of the sale's items when the sale exists.
func place(ctx context.Context, t *tool.Tool, id int64, rep *PlanReport, top *sharding.Topology) error {
	s := rep.Shards
	tags, err := sharding.PlaceTags(id, s, top)
	if err != nil {
		return err
	}
	for i, tag := range tags {
		rep.Placement = append(rep.Placement, tool.Placement{Shard: i, Tag: tag, Slot: sharding.Slot([]byte("{" + tag + "}")), Master: top.MasterOfTag(tag)})
	}
	sale, err := t.Store.LoadSale(ctx, id)
	if err != nil {
		return nil // not created yet: the placement alone
	}
	rep.UnitsPerShard = map[int64]int64{}
	for _, it := range sale.Items {
		per := it.Quantity / int64(s)
		rep.UnitsPerShard[it.ID] = per
		if per < 10 {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf(
				"item %d: %d units over %d shards is %d a shard; home shards run dry early and purchases lean on borrowing", it.ID, it.Quantity, s, per))
		}
	}
	return nil
}

// Text renders the plan.
func (r *PlanReport) Text(w io.Writer) error {
	if len(r.Measured) > 0 {
		fmt.Fprintln(w, "measured reserve.lua throughput (one test shard per master, rueidis auto-pipelining):")
		tb := tool.NewTable(w, "master", "calls", "seconds", "calls/s", "errors")
		for _, m := range r.Measured {
			tb.Row(m.Master, tool.Itoa(m.Calls), fmt.Sprintf("%.2f", m.Seconds), num(m.PerSec), tool.Itoa(m.Errors))
		}
		if err := tb.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w, "(measured from this one client: on a small machine the client, not Redis, may be the limit, so C is a lower bound)")
		fmt.Fprintln(w)
	}
	for _, l := range r.Arithmetic {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintf(w, "\nshard count S = %d\n", r.Shards)
	for _, wr := range r.Warnings {
		fmt.Fprintln(w, "warning:", wr)
	}
	if len(r.Placement) > 0 {
		fmt.Fprintln(w, "\nplacement (live CLUSTER SLOTS):")
		tb := tool.NewTable(w, "shard", "tag", "slot", "master")
		for _, p := range r.Placement {
			tb.Row(strconv.Itoa(p.Shard), p.Tag, strconv.Itoa(int(p.Slot)), p.Master)
		}
		if err := tb.Flush(); err != nil {
			return err
		}
		for item, n := range r.UnitsPerShard {
			fmt.Fprintf(w, "item %d: about %d units a shard\n", item, n)
		}
	}
	return nil
}

func num(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'f', 1, 64)
}

// Measure runs the real reserve script against one test shard on each master
// of top, one master after the other, for d each (default 2 s) from 64
// goroutines sharing one auto-pipelined client, and reports calls/s
// per master. Every call is a real reservation (a fresh user each time) of a
// test sale with more units than the run can take; its keys are removed after.
func Measure(ctx context.Context, t *tool.Tool, top *sharding.Topology, d time.Duration) ([]MasterCapacity, error) {
	if d <= 0 {
		d = 2 * time.Second
	}
	const workers = 64
	// A sale id far from real ones (they are small counters in practice);
	// random so two measuring tools never share keys.
	saleID := int64(sharding.MaxSaleID - rand.Int64N(1<<20))
	tags, err := sharding.PlaceTagsVersion(saleID, 999, len(top.Masters), top)
	if err != nil {
		return nil, err
	}
	const item = 1
	out := make([]MasterCapacity, len(tags))
	for i, tag := range tags {
		out[i].Master = top.MasterOfTag(tag)
		stockKey := string(sharding.AppendStockKey(nil, tag, item))
		buyers := string(sharding.AppendBuyersKey(nil, tag))
		if err := t.Redis.Do(ctx, t.Redis.B().Set().Key(stockKey).Value(strconv.FormatInt(1<<50, 10)).Ex(time.Minute).Build()).Error(); err != nil {
			return nil, fmt.Errorf("measuring %s: %w", out[i].Master, err)
		}
		var calls, errs atomic.Int64
		var users atomic.Uint64
		mctx, cancel := context.WithTimeout(ctx, d)
		began := time.Now()
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for mctx.Err() == nil {
					now := time.Now()
					_, err := t.Store.Reserve(mctx, stock.Reservation{Tag: tag, ItemID: item, UserID: users.Add(1),
						OrderID: sharding.NewOrderID(saleID, rand.Uint64(), rand.Uint32()),
						Created: now, Expires: now.Add(time.Minute), TTL: 5 * time.Second})
					if err != nil {
						if mctx.Err() == nil {
							errs.Add(1)
						}
						continue
					}
					calls.Add(1)
				}
			}()
		}
		wg.Wait()
		cancel()
		out[i].Seconds = time.Since(began).Seconds()
		out[i].Calls, out[i].Errors = calls.Load(), errs.Load()
		out[i].PerSec = float64(out[i].Calls) / out[i].Seconds
		// The order records expire by themselves within seconds.
		_ = t.Redis.Do(ctx, t.Redis.B().Del().Key(stockKey).Build()).Error()
		_ = t.Redis.Do(ctx, t.Redis.B().Unlink().Key(buyers).Build()).Error()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return out, nil
}
