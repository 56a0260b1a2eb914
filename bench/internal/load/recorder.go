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

// maxCodes bounds the distinct codes a recorder keeps; more go to "OTHER".
const maxCodes = 64

// Second holds what completed during one second of the run.
type Second struct {
	Hist *hdrhistogram.Histogram // latency in µs, secondDigits precision
	// Done counts responses and transport failures; OK counts 2xx, Client 4xx
	// other than 429, Limited 429, Server 5xx, Failed transport failures.
	Done, OK, Client, Limited, Server, Failed int64
	Sent                                      int64 // requests written in this second
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
	Hist *hdrhistogram.Histogram // every latency, µs
	Secs []Second
	// Status[k][s] counts responses of status s to requests of kind k; s = 0
	// is unused.
	Status [numKinds][600]int64
	// Errs[k][e] counts transport failures e of requests of kind k.
	Errs [numKinds][numErrs]int64
	// Codes[k][c] counts error code CodeNames[c] in bodies of kind k.
	Codes     [numKinds][maxCodes]int64
	CodeNames []string
	Late      int64 // sends later than Options.LateBy after their intended time
	Retries   int64 // follow-up retries scheduled
	Unsent    int64 // scheduled requests dropped at the end of the run
	Accepted  []Accepted
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
	r := &Recorder{Hist: hdrhistogram.New(histMin, histMax, totalDigits)}
	r.CodeNames = append(r.CodeNames, KnownCodes...)
	return r
}

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

// recordSend counts a write at elapsed ns, lateNs after its intended time.
func (r *Recorder) recordSend(elapsed, lateNs, lateBy int64) {
	r.second(int(elapsed/1e9)).Sent++
	if lateNs > lateBy {
		r.Late++
	}
	if lateNs > r.MaxLateNs {
		r.MaxLateNs = lateNs
	}
	r.live.sent.Add(1)
}

// recordResponse counts a response of kind k with status st and latency latNs,
// completed at elapsed ns. code is the body's error code or nil.
func (r *Recorder) recordResponse(k Kind, st int, code []byte, elapsed, latNs int64) {
	us := latNs / 1000
	if us < histMin {
		us = histMin
	}
	if us > histMax {
		us = histMax
	}
	_ = r.Hist.RecordValue(us)
	s := r.second(int(elapsed / 1e9))
	_ = s.Hist.RecordValue(us)
	s.Done++
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
	r.Retries += o.Retries
	r.Unsent += o.Unsent
	r.MaxLateNs = max(r.MaxLateNs, o.MaxLateNs)
	r.Accepted = append(r.Accepted, o.Accepted...)
}
