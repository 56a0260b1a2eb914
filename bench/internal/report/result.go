// Package report turns a finished run into what people read: a text summary
// on stdout, result.json (with the HDR histograms, so runs can be merged and
// compared), and report.html, a self-contained page (html/template) whose
// charts are inline SVG drawn here, so it opens offline: latency per outcome
// and its percentile distribution, the sell-out curve, the status mix over
// time on a log scale, latency and throughput over time, the run's metadata,
// and loud warnings when the figures cannot be trusted as they stand.
package report

import (
	"fmt"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"flashsale/bench/internal/audit"
	"flashsale/bench/internal/load"
	"flashsale/sharding"
)

// Latency is a latency summary in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Count is one line of a status, code or error breakdown.
type Count struct {
	Kind  string `json:"kind"`
	What  string `json:"what"` // a status code, an error code or a transport failure
	Count int64  `json:"count"`
}

// Second is one second of the run's timeline.
type Second struct {
	T       int     `json:"t"`
	Offered int64   `json:"offered"` // scheduled sends whose intended time falls in this second (open loop)
	Sent    int64   `json:"sent"`
	Done    int64   `json:"done"`
	OK      int64   `json:"ok"`
	Client  int64   `json:"client4xx"`
	Limited int64   `json:"limited429"`
	Server  int64   `json:"server5xx"`
	Failed  int64   `json:"failed"`
	P50     float64 `json:"p50"`
	P99     float64 `json:"p99"`
	Max     float64 `json:"max"`
	// Out counts responses by outcome name (load.OutcomeNames).
	Out map[string]int64 `json:"outcomes,omitempty"`
	// Hist is the second's latency histogram (µs), hdrhistogram's base64
	// compressed encoding, so merged runs get true percentiles per second.
	Hist string `json:"hist,omitempty"`
}

// Result is a run as result.json holds it.
type Result struct {
	Scenario   string    `json:"scenario"`
	URL        string    `json:"url"`
	Start      time.Time `json:"start"`
	Elapsed    float64   `json:"elapsedSeconds"`
	Mode       string    `json:"mode"` // "closed" or "open"
	Conns      int       `json:"connections"`
	Workers    int       `json:"workers"`
	GOMAXPROCS int       `json:"gomaxprocs"`
	Users      int       `json:"users"`
	Items      []int64   `json:"items"`
	SaleID     int64     `json:"saleId,omitempty"`

	Sent       int64   `json:"sent"`
	Done       int64   `json:"done"` // responses plus transport failures
	Responses  int64   `json:"responses"`
	Failed     int64   `json:"failed"`
	Throughput float64 `json:"throughput"` // responses per second over the run
	PeakSecond int64   `json:"peakSecond"` // most responses in one second
	Late       int64   `json:"late"`
	LateWaited int64   `json:"lateWaitedForConnection"` // late sends that waited for a free connection
	LateBy     string  `json:"lateBy"`
	MaxLateMs  float64 `json:"maxLateMs"`
	Unsent     int64   `json:"unsent"`
	Retries    int64   `json:"retries"`
	Accepted   int     `json:"accepted"` // 202 answers to purchases
	Winners    int     `json:"winners"`  // distinct order ids among them
	// FirstAcceptedS and LastAcceptedS are when the first and the last 202
	// of a purchase arrived, seconds after the run's start: with a sale that
	// sells out, the last is the time to sell out (0 when none).
	FirstAcceptedS float64 `json:"firstAcceptedSeconds"`
	LastAcceptedS  float64 `json:"lastAcceptedSeconds"`

	// AcceptedN counts every 202 to a purchase, replays included.
	AcceptedN int64 `json:"acceptedAnswers"`

	Latency     Latency `json:"latencyMs"`
	Uncorrected Latency `json:"uncorrectedLatencyMs"`
	// Hist and HistUncorrected hold every latency (µs), hdrhistogram's
	// base64 compressed encoding.
	Hist            string        `json:"hist"`
	HistUncorrected string        `json:"histUncorrected"`
	Outcomes        []Outcome     `json:"outcomes"`
	Sales           []ItemSale    `json:"sellOut"`
	Stock           []StockSample `json:"stockSamples,omitempty"`
	Meta            Meta          `json:"meta"`

	Status   []Count  `json:"status"`
	Codes    []Count  `json:"codes"`
	Errors   []Count  `json:"errors"`
	Timeline []Second `json:"timeline"`

	Audit *audit.Report `json:"audit,omitempty"`

	acceptedOrders []AcceptedOrder // written to accepted.tsv
}

// Outcome is the latency of one kind of answer (202, 409, ..., pay, cancel).
type Outcome struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
	// Latency counts from the intended send time (what a user waits,
	// including time queued in the generator); Uncorrected from the actual
	// send (what wrk without -R reports).
	Latency     Latency `json:"latencyMs"`
	Uncorrected Latency `json:"uncorrectedMs"`
	// Hist and HistUncorrected are the histograms (µs) in hdrhistogram's
	// base64 compressed encoding (V2), decodable by any HdrHistogram port.
	Hist            string `json:"hist"`
	HistUncorrected string `json:"histUncorrected"`
}

// ItemSale is one item's sell-out: when its 202s came and, with its quantity
// known (from -sale), when the last unit went.
type ItemSale struct {
	ID       int64 `json:"id"`
	Quantity int64 `json:"quantity"` // 0: unknown
	Accepted int64 `json:"accepted"` // distinct orders answered 202
	// FirstS and LastS are the first and last 202 in seconds after the start;
	// SoldOutS is LastS when the 202s reached the quantity, else 0.
	FirstS   float64 `json:"firstAcceptedSeconds"`
	LastS    float64 `json:"lastAcceptedSeconds"`
	SoldOutS float64 `json:"soldOutSeconds"`
	// Ticks counts the distinct 202s per TickMs after the start: the
	// sell-out curve is Quantity minus their running sum.
	Ticks []int64 `json:"ticks"`
}

// TickMs is the resolution of ItemSale.Ticks.
const TickMs = 100

// StockSample is one reading of the gateway's stock gauge: units left per
// item, T seconds after the start.
type StockSample struct {
	T    float64          `json:"t"`
	Left map[string]int64 `json:"left"` // item id -> units, summed over shards
}

// Meta says how the run was made, so that it can be made again.
type Meta struct {
	Seed       uint64   `json:"seed"`
	Commit     string   `json:"commit"`
	GoVersion  string   `json:"goVersion"`
	Args       []string `json:"args"`
	Host       string   `json:"host"`
	OS         string   `json:"os"`
	Arch       string   `json:"arch"`
	CPUs       int      `json:"cpus"`
	Engine     string   `json:"engine"`
	Shard      string   `json:"shard,omitempty"`       // "i/N" of a sharded run
	Shards     []string `json:"shards,omitempty"`      // a merged run: the merged directories
	SourceAddr []string `json:"sourceAddrs,omitempty"` // local addresses bound
}

// AcceptedOrder is one distinct 202, for the audit of a merged run.
type AcceptedOrder struct {
	Order  sharding.OrderID
	ItemID int64
}

// Info is what Build needs beside the engine's result.
type Info struct {
	LateBy   time.Duration
	Items    []int64 // item ids, by index
	Quantity []int64 // their quantities (nil or 0: unknown)
}

func msOf(us int64) float64 { return float64(us) / 1000 }

func summarize(h *hdrhistogram.Histogram) Latency {
	if h == nil || h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{P50: msOf(h.ValueAtQuantile(50)), P90: msOf(h.ValueAtQuantile(90)), P99: msOf(h.ValueAtQuantile(99)),
		P999: msOf(h.ValueAtQuantile(99.9)), Max: msOf(h.Max()), Mean: h.Mean() / 1000}
}

// Build fills a Result from a finished run. The caller sets the descriptive
// fields (Scenario, URL, Users, Meta, ...).
func Build(res *load.Result, in Info) *Result {
	r := res.Recorder
	out := &Result{Start: res.Start, Elapsed: res.Elapsed.Seconds(), Conns: res.Conns, Workers: res.Workers,
		Late: r.Late, LateWaited: r.LateWaited, LateBy: in.LateBy.String(), MaxLateMs: float64(r.MaxLateNs) / 1e6, Unsent: r.Unsent,
		Retries: r.Retries, Mode: "open", Items: in.Items}
	if res.Closed {
		out.Mode = "closed"
	}
	out.Hist, out.HistUncorrected = encodeHist(r.Hist), encodeHist(r.Uncorrected)
	for o := range load.NumOutcomes {
		if n := r.OutHist[o].TotalCount(); n > 0 {
			out.Outcomes = append(out.Outcomes, Outcome{Name: load.OutcomeNames[o], Count: n,
				Hist: encodeHist(r.OutHist[o]), HistUncorrected: encodeHist(r.OutUncorrected[o])})
		}
	}
	buildCounts(out, r)
	for i, s := range r.Secs {
		sec := Second{T: i, Sent: s.Sent, Done: s.Done, OK: s.OK, Client: s.Client, Limited: s.Limited, Server: s.Server, Failed: s.Failed}
		for o, n := range s.Out {
			if n > 0 {
				if sec.Out == nil {
					sec.Out = map[string]int64{}
				}
				sec.Out[load.OutcomeNames[o]] = n
			}
		}
		if s.Hist != nil && s.Hist.TotalCount() > 0 {
			sec.Hist = encodeHist(s.Hist)
		}
		out.Timeline = append(out.Timeline, sec)
	}
	out.sellOut(r.Accepted, in)
	out.Finish()
	return out
}

// buildCounts fills the status, code and error breakdowns.
func buildCounts(out *Result, r *load.Recorder) {
	for _, k := range []load.Kind{load.Purchase, load.Pay, load.Cancel, load.GetOrder} {
		for st, n := range r.Status[k] {
			if n > 0 {
				out.Status = append(out.Status, Count{Kind: k.String(), What: fmt.Sprint(st), Count: n})
			}
		}
		for c, n := range r.Codes[k] {
			if n > 0 {
				name := "OTHER"
				if c < len(r.CodeNames) {
					name = r.CodeNames[c]
				}
				out.Codes = append(out.Codes, Count{Kind: k.String(), What: name, Count: n})
			}
		}
		for e, n := range r.Errs[k] {
			if n > 0 {
				out.Errors = append(out.Errors, Count{Kind: k.String(), What: load.ErrNames[e], Count: n})
			}
		}
	}
}

// sellOut fills Sales and the accepted orders from the 202s.
func (r *Result) sellOut(acc []load.Accepted, in Info) {
	seen := map[sharding.OrderID]bool{}
	byItem := make([]ItemSale, len(in.Items))
	for i, id := range in.Items {
		byItem[i].ID = id
		if i < len(in.Quantity) {
			byItem[i].Quantity = in.Quantity[i]
		}
	}
	for _, a := range acc {
		if seen[a.Order] || int(a.Item) >= len(byItem) {
			continue
		}
		seen[a.Order] = true
		it := &byItem[a.Item]
		r.acceptedOrders = append(r.acceptedOrders, AcceptedOrder{Order: a.Order, ItemID: it.ID})
		t := float64(a.At) / 1e9
		if it.Accepted == 0 || t < it.FirstS {
			it.FirstS = t
		}
		it.LastS = max(it.LastS, t)
		it.Accepted++
		tick := int(a.At / (TickMs * 1e6))
		for len(it.Ticks) <= tick {
			it.Ticks = append(it.Ticks, 0)
		}
		it.Ticks[tick]++
	}
	r.AcceptedN = int64(len(acc))
	r.Sales = byItem
}

// Finish derives the totals (responses, throughput, percentiles, time to
// sell out) from the counts, timeline and histograms; Build and Merge call it.
func (r *Result) Finish() {
	r.Responses, r.Failed, r.Sent, r.PeakSecond = 0, 0, 0, 0
	for _, c := range r.Status {
		r.Responses += c.Count
	}
	for _, c := range r.Errors {
		r.Failed += c.Count
	}
	r.Done = r.Responses + r.Failed
	for i := range r.Timeline {
		s := &r.Timeline[i]
		r.Sent += s.Sent
		r.PeakSecond = max(r.PeakSecond, s.Done-s.Failed)
		if h := decodeHist(s.Hist); h != nil {
			l := summarize(h)
			s.P50, s.P99, s.Max = l.P50, l.P99, l.Max
		}
	}
	r.Latency, r.Uncorrected = summarize(decodeHist(r.Hist)), summarize(decodeHist(r.HistUncorrected))
	for i := range r.Outcomes {
		o := &r.Outcomes[i]
		o.Latency, o.Uncorrected = summarize(decodeHist(o.Hist)), summarize(decodeHist(o.HistUncorrected))
	}
	r.Throughput = 0
	if r.Elapsed > 0 {
		r.Throughput = float64(r.Responses) / r.Elapsed
	}
	r.Accepted, r.Winners = int(r.AcceptedN), 0
	r.FirstAcceptedS, r.LastAcceptedS = 0, 0
	for i := range r.Sales {
		it := &r.Sales[i]
		it.SoldOutS = 0
		if it.Quantity > 0 && it.Accepted >= it.Quantity {
			it.SoldOutS = it.LastS
		}
		if it.Accepted == 0 {
			continue
		}
		if r.Winners == 0 || it.FirstS < r.FirstAcceptedS {
			r.FirstAcceptedS = it.FirstS
		}
		r.LastAcceptedS = max(r.LastAcceptedS, it.LastS)
		r.Winners += int(it.Accepted)
	}
}

// SetOffered records the scheduled send times (ns after the start) of an
// open-loop run, so the report can set the offered load beside the load sent.
func (r *Result) SetOffered(at func(i int) int64, n int) {
	for i := 0; i < n; i++ {
		sec := int(at(i) / 1e9)
		for len(r.Timeline) <= sec {
			r.Timeline = append(r.Timeline, Second{T: len(r.Timeline)})
		}
		r.Timeline[sec].Offered++
	}
}
