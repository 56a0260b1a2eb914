package load

import (
	"sync/atomic"

	"github.com/HdrHistogram/hdrhistogram-go"

	"flashsale/sharding"
	"flashsale/sharding/api"
)

// Histogram ranges: latencies are recorded in microseconds from 1µs to one hour.
const (
	histMin = 1
	histMax = 3_600_000_000
	// totalDigits and secondDigits are the significant digits of the whole-run
	// histogram and of the per-second ones (smaller: there is one per second).
	totalDigits  = 3
	secondDigits = 2
)

// Transport failures, counted where a response status would be.
const (
	ErrConnect  = iota // dialing failed
	ErrWrite           // writing the request failed
	ErrRead            // reading failed or the peer closed mid-response
	ErrTimeout         // no complete response within Options.Timeout
	ErrProtocol        // a response this client cannot parse
	numErrs
)

// ErrNames names the transport failures by index.
var ErrNames = [numErrs]string{"connect", "write", "read", "timeout", "protocol"}

// KnownCodes are the error codes of SPEC.md's API (package api, shared
// with the gateway), counted without allocating; any other code is counted
// under its own name too, allocating once per new name.
var KnownCodes = api.Codes

// Outcomes: what latency is kept apart for. A 202 and a 410 are different
// experiences (one waited for Redis, one was refused from memory), so each has
// its own histograms.
const (
	OutAccepted    = iota // purchase answered 202
	OutConflict           // purchase answered 409
	OutGone               // purchase answered 410
	OutLimited            // purchase answered 429
	OutUnavailable        // purchase answered 503
	OutOther              // purchase answered anything else
	OutPay                // pay, any status
	OutCancel             // cancel, any status
	OutGet                // GET order, any status
	NumOutcomes
)

// OutcomeNames names the outcomes by index, as reports show them.
var OutcomeNames = [NumOutcomes]string{"202", "409", "410", "429", "503", "other", "pay", "cancel", "get-order"}

// outcome returns the outcome of a response of kind k with status st.
func outcome(k Kind, st int) int {
	switch k {
	case Pay:
		return OutPay
	case Cancel:
		return OutCancel
	case GetOrder:
		return OutGet
	}
	switch st {
	case 202:
		return OutAccepted
	case 409:
		return OutConflict
	case 410:
		return OutGone
	case 429:
		return OutLimited
	case 503:
		return OutUnavailable
	}
	return OutOther
}

// maxCodes bounds the distinct codes a recorder keeps; more go to "OTHER".
const maxCodes = 64

// Second holds what completed during one second of the run.
type Second struct {
	Hist *hdrhistogram.Histogram // latency in µs, secondDigits precision
	// Done counts responses and transport failures; OK counts 2xx, Client 4xx
	// other than 429, Limited 429, Server 5xx, Failed transport failures.
	Done, OK, Client, Limited, Server, Failed int64
	Sent                                      int64 // requests written in this second
	Out                                       [NumOutcomes]int64
}

// Accepted is one purchase the gateway answered 202.
type Accepted struct {
	User  uint32 // user index
	Item  uint16 // item index
	Order sharding.OrderID
	At    int64 // when the 202 arrived, ns since the run's start
}

// Recorder collects one worker's measurements. Only its worker writes to it,
// so nothing in it is locked; Merge combines recorders after the run.
type Recorder struct {
	// Hist holds every latency in µs, counted from the intended send time
	// (corrected for coordinated omission); Uncorrected from the actual send.
	Hist, Uncorrected *hdrhistogram.Histogram
	// OutHist and OutUncorrected are the same per outcome (Out*).
	OutHist, OutUncorrected [NumOutcomes]*hdrhistogram.Histogram
	Secs                    []Second
	// Status[k][s] counts responses of status s to requests of kind k; s = 0
	// is unused.
	Status [numKinds][600]int64
	// Errs[k][e] counts transport failures e of requests of kind k.
	Errs [numKinds][numErrs]int64
	// Codes[k][c] counts error code CodeNames[c] in bodies of kind k.
	Codes     [numKinds][maxCodes]int64
	CodeNames []string
	Late      int64 // sends later than Options.LateBy after their intended time
	// LateWaited counts the late sends that waited for a free connection:
	// every connection was busy, waiting for the target's answers, after the
	// send was due (the target's pace). The others were late for the
	// generator itself (its CPU). Counted on Linux only.
	LateWaited int64
	Retries    int64 // follow-up retries scheduled
	Unsent     int64 // scheduled requests dropped at the end of the run
	Accepted   []Accepted
	// MaxLateNs is the largest send delay seen, in ns.
	MaxLateNs int64

	live liveCounters
}

// liveCounters are read by the progress printer while the worker runs.
type liveCounters struct {
	done, failed, sent, inflight atomic.Int64
	_                            [32]byte // keep workers' counters off one cache line
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	r := &Recorder{Hist: newHist(), Uncorrected: newHist()}
	for i := range r.OutHist {
		r.OutHist[i], r.OutUncorrected[i] = newHist(), newHist()
	}
	r.CodeNames = append(r.CodeNames, KnownCodes...)
	return r
}

// newHist returns an empty whole-run histogram.
func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, totalDigits) }

// clampUs converts ns to µs within the histograms' range.
func clampUs(ns int64) int64 { return min(max(ns/1000, histMin), histMax) }

func (r *Recorder) second(sec int) *Second {
	if sec < 0 {
		sec = 0
	}
	for len(r.Secs) <= sec {
		r.Secs = append(r.Secs, Second{})
	}
	s := &r.Secs[sec]
	if s.Hist == nil {
		s.Hist = hdrhistogram.New(histMin, histMax, secondDigits)
	}
	return s
}

// recordSend counts a write at elapsed ns, lateNs after its intended time;
// waited says it waited for a free connection (every one busy after it was
// due).
func (r *Recorder) recordSend(elapsed, lateNs, lateBy int64, waited bool) {
	r.second(int(elapsed/1e9)).Sent++
	if lateNs > lateBy {
		r.Late++
		if waited {
			r.LateWaited++
		}
	}
	if lateNs > r.MaxLateNs {
		r.MaxLateNs = lateNs
	}
	r.live.sent.Add(1)
}

// recordResponse counts a response of kind k with status st, completed at
// elapsed ns, latNs after its intended send time and sentNs after its actual
// send. code is the body's error code or nil.
func (r *Recorder) recordResponse(k Kind, st int, code []byte, elapsed, latNs, sentNs int64) {
	us, raw := clampUs(latNs), clampUs(sentNs)
	o := outcome(k, st)
	_ = r.Hist.RecordValue(us)
	_ = r.Uncorrected.RecordValue(raw)
	_ = r.OutHist[o].RecordValue(us)
	_ = r.OutUncorrected[o].RecordValue(raw)
	s := r.second(int(elapsed / 1e9))
	_ = s.Hist.RecordValue(us)
	s.Done++
	s.Out[o]++
	switch {
	case st >= 200 && st < 300:
		s.OK++
	case st == 429:
		s.Limited++
	case st >= 500:
		s.Server++
	default:
		s.Client++
	}
	if st > 0 && st < 600 {
		r.Status[k][st]++
	}
	if len(code) > 0 {
		r.Codes[k][r.codeIndex(code)]++
	}
	r.live.done.Add(1)
}

// recordFailure counts a transport failure e of kind k at elapsed ns. It
// records no latency: there was no response.
func (r *Recorder) recordFailure(k Kind, e int, elapsed int64) {
	s := r.second(int(elapsed / 1e9))
	s.Done++
	s.Failed++
	r.Errs[k][e]++
	r.live.done.Add(1)
	r.live.failed.Add(1)
}

func (r *Recorder) codeIndex(code []byte) int {
	for i, n := range r.CodeNames {
		if string(code) == n {
			return i
		}
	}
	if len(r.CodeNames) >= maxCodes-1 {
		return maxCodes - 1
	}
	r.CodeNames = append(r.CodeNames, string(code))
	return len(r.CodeNames) - 1
}

// Merge adds o's counts to r. Code indexes are matched by name.
func (r *Recorder) Merge(o *Recorder) {
	r.Hist.Merge(o.Hist)
	r.Uncorrected.Merge(o.Uncorrected)
	for i := range r.OutHist {
		r.OutHist[i].Merge(o.OutHist[i])
		r.OutUncorrected[i].Merge(o.OutUncorrected[i])
	}
	for i := range o.Secs {
		os := &o.Secs[i]
		if os.Hist == nil {
			continue
		}
		s := r.second(i)
		s.Hist.Merge(os.Hist)
		s.Done += os.Done
		s.OK += os.OK
		s.Client += os.Client
		s.Limited += os.Limited
		s.Server += os.Server
		s.Failed += os.Failed
		s.Sent += os.Sent
		for j := range s.Out {
			s.Out[j] += os.Out[j]
		}
	}
	for k := range r.Status {
		for s := range r.Status[k] {
			r.Status[k][s] += o.Status[k][s]
		}
		for e := range r.Errs[k] {
			r.Errs[k][e] += o.Errs[k][e]
		}
		for c, n := range o.Codes[k] {
			if n == 0 {
				continue
			}
			name := "OTHER"
			if c < len(o.CodeNames) {
				name = o.CodeNames[c]
			}
			r.Codes[k][r.codeIndex([]byte(name))] += n
		}
	}
	r.Late += o.Late
	r.LateWaited += o.LateWaited
	r.Retries += o.Retries
	r.Unsent += o.Unsent
	r.MaxLateNs = max(r.MaxLateNs, o.MaxLateNs)
	r.Accepted = append(r.Accepted, o.Accepted...)
}
