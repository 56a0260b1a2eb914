// Package report turns a finished run into what people read: a text summary
// on stdout, result.json, and report.html, a self-contained page whose charts
// (latency over time, throughput over time, status mix) are inline SVG drawn
// here, so it opens offline.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"flashsale/bench/internal/audit"
	"flashsale/bench/internal/load"
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

	Latency  Latency  `json:"latencyMs"`
	Status   []Count  `json:"status"`
	Codes    []Count  `json:"codes"`
	Errors   []Count  `json:"errors"`
	Timeline []Second `json:"timeline"`

	Audit *audit.Report `json:"audit,omitempty"`
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
// fields (Scenario, URL, Users, ...).
func Build(res *load.Result, lateBy time.Duration) *Result {
	r := res.Recorder
	out := &Result{Start: res.Start, Elapsed: res.Elapsed.Seconds(), Conns: res.Conns, Workers: res.Workers,
		Late: r.Late, LateBy: lateBy.String(), MaxLateMs: float64(r.MaxLateNs) / 1e6, Unsent: r.Unsent,
		Retries: r.Retries, Latency: summarize(r.Hist), Mode: "open"}
	if res.Closed {
		out.Mode = "closed"
	}
	kinds := []load.Kind{load.Purchase, load.Pay, load.Cancel, load.GetOrder}
	for _, k := range kinds {
		for st, n := range r.Status[k] {
			if n > 0 {
				out.Status = append(out.Status, Count{Kind: k.String(), What: fmt.Sprint(st), Count: n})
				out.Responses += n
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
				out.Failed += n
			}
		}
	}
	out.Done = out.Responses + out.Failed
	for i, s := range r.Secs {
		sec := Second{T: i, Sent: s.Sent, Done: s.Done, OK: s.OK, Client: s.Client, Limited: s.Limited, Server: s.Server, Failed: s.Failed}
		out.Sent += s.Sent
		if s.Hist != nil && s.Hist.TotalCount() > 0 {
			l := summarize(s.Hist)
			sec.P50, sec.P99, sec.Max = l.P50, l.P99, l.Max
		}
		out.PeakSecond = max(out.PeakSecond, s.Done-s.Failed)
		out.Timeline = append(out.Timeline, sec)
	}
	if out.Elapsed > 0 {
		out.Throughput = float64(out.Responses) / out.Elapsed
	}
	out.Accepted = len(r.Accepted)
	seen := map[[16]byte]bool{}
	first, last := int64(-1), int64(0)
	for _, a := range r.Accepted {
		seen[a.Order] = true
		if first < 0 || a.At < first {
			first = a.At
		}
		last = max(last, a.At)
	}
	if first >= 0 {
		out.FirstAcceptedS, out.LastAcceptedS = float64(first)/1e9, float64(last)/1e9
	}
	out.Winners = len(seen)
	return out
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

// WriteFiles writes result.json and report.html into dir (created) and
// returns the report's path.
func (r *Result) WriteFiles(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encoding result: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "result.json"), append(b, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("writing result: %w", err)
	}
	html := filepath.Join(dir, "report.html")
	f, err := os.Create(html)
	if err != nil {
		return "", fmt.Errorf("writing report: %w", err)
	}
	if err := r.WriteHTML(f); err != nil {
		f.Close()
		return "", fmt.Errorf("writing report: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("writing report: %w", err)
	}
	return html, nil
}

// WriteText prints the summary.
func (r *Result) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "\n%s against %s: %s loop, %d connections, %d workers (GOMAXPROCS %d), %d users\n",
		r.Scenario, r.URL, r.Mode, r.Conns, r.Workers, r.GOMAXPROCS, r.Users)
	fmt.Fprintf(w, "elapsed %.2fs, sent %d, responses %d, transport failures %d, throughput %.0f/s (peak second %d)\n",
		r.Elapsed, r.Sent, r.Responses, r.Failed, r.Throughput, r.PeakSecond)
	if r.Mode == "open" {
		fmt.Fprintf(w, "late sends (> %s after intended time) %d, max send delay %.1fms, unsent at end %d\n", r.LateBy, r.Late, r.MaxLateMs, r.Unsent)
	}
	if r.Retries > 0 || r.Accepted > 0 {
		fmt.Fprintf(w, "retries scheduled %d, purchases accepted (202) %d, distinct orders %d\n", r.Retries, r.Accepted, r.Winners)
		if r.Accepted > 0 {
			fmt.Fprintf(w, "accepted purchases: first 202 at %.3fs, last at %.3fs after the start (with a sale that sells out: the time to sell out)\n",
				r.FirstAcceptedS, r.LastAcceptedS)
		}
	}
	l := r.Latency
	fmt.Fprintf(w, "latency ms: p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  mean %.3f\n", l.P50, l.P90, l.P99, l.P999, l.Max, l.Mean)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "kind\tstatus/error\tcount\tshare")
	total := max(r.Done, 1)
	rows := slices.Concat(r.Status, r.Codes, r.Errors)
	for _, c := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f%%\n", c.Kind, c.What, c.Count, 100*float64(c.Count)/float64(total))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "throughput per second (responses):", timelineText(r.Timeline))
	return nil
}

func timelineText(t []Second) string {
	var b strings.Builder
	for i, s := range t {
		if i > 0 {
			b.WriteByte(' ')
		}
		if i >= 60 {
			fmt.Fprintf(&b, "... (%d more)", len(t)-i)
			break
		}
		fmt.Fprint(&b, s.Done-s.Failed)
	}
	return b.String()
}
