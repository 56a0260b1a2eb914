package load

import (
	"time"
)

// Action is one request to send. Actions of a Plan are sorted by At.
type Action struct {
	// At is the intended send time in ns after the run's start. In closed
	// loop it is ignored and the send time stands in for it.
	At    int64
	User  uint32 // index into the run's users (and tokens)
	Item  uint16 // index into the run's items
	Kind  Kind
	Try   uint8 // 0 for the first attempt, n for the n-th retry
	Click uint8 // which click of the user this is; names the idempotency key
	// Order is the order a Pay, Cancel or GetOrder names.
	Order [16]byte
}

// Stage is one step of an open-loop rate schedule.
type Stage struct {
	Rate float64       // requests per second
	For  time.Duration // how long the rate holds
}

// Plan says what a run sends. Either Actions is set (a scenario's schedule),
// or requests are generated: request i is a purchase by user i%Users of item
// i%Items, at the times Stages give (open loop), or as fast as connections
// allow when Stages is empty (closed loop).
type Plan struct {
	Actions []Action
	Users   int
	Items   int
	Stages  []Stage
	// Count stops generated requests after this many (0: no limit).
	Count int64
	// Duration stops generated closed-loop requests after this long (0: no
	// limit; then Count must be set).
	Duration time.Duration
	Follow   FollowUps
	// Slice and Slices split generated requests over Slices bench
	// instances: this one sends requests Slice, Slice+Slices, ... of the
	// whole schedule, at their times in it (0 and 0 or 1: all of them).
	// Actions are sliced by the scenario, not here.
	Slice, Slices int
}

// stride is the number of slices generated requests are split over.
func (p *Plan) stride() int64 { return int64(max(p.Slices, 1)) }

// global maps this slice's request i to its index in the whole schedule.
func (p *Plan) global(i int64) int64 { return i*p.stride() + int64(p.Slice) }

// FollowUps says what a simulated user does after a response.
type FollowUps struct {
	// RetryFraction of users retry a purchase refused with 429 or 503 (and,
	// with RetryRefusals, with 410 or a transport failure), at most Retries
	// times, after Backoff doubled per try with ±50% jitter (or after the
	// Retry-After header, when longer). Backoff 0 retries at once.
	RetryFraction float64
	Retries       int
	Backoff       time.Duration
	RetryRefusals bool
	// A winner (202) pays with probability Pay, cancels with probability
	// Cancel and otherwise walks away, after Think plus up to Think of jitter.
	Pay, Cancel float64
	Think       time.Duration
}

// closed reports whether generated requests are sent in closed loop.
func (p *Plan) closed() bool {
	return p.Actions == nil && len(p.Stages) == 0
}

// total returns the number of requests this slice schedules, or -1 when
// unbounded.
func (p *Plan) total() int64 {
	if p.Actions != nil {
		return int64(len(p.Actions))
	}
	all := p.wholeTotal()
	if all < 0 {
		return -1
	}
	return max(0, (all-int64(p.Slice)+p.stride()-1)/p.stride())
}

// wholeTotal is total over every slice.
func (p *Plan) wholeTotal() int64 {
	if len(p.Stages) > 0 {
		var n float64
		for _, s := range p.Stages {
			n += s.Rate * s.For.Seconds()
		}
		if p.Count > 0 && p.Count < int64(n) {
			return p.Count
		}
		return int64(n)
	}
	if p.Count > 0 {
		return p.Count
	}
	return -1
}

// Total returns the number of requests the plan schedules, or -1 when it is
// unbounded (closed loop for a duration).
func (p *Plan) Total() int64 { return p.total() }

// At returns the intended send time of this slice's generated request i
// under Stages, in ns after the start.
func (p *Plan) At(i int) int64 { return p.at(p.global(int64(i))) }

// at returns the intended send time of generated request i under Stages.
func (p *Plan) at(i int64) int64 {
	var base int64
	var done float64
	for _, s := range p.Stages {
		n := s.Rate * s.For.Seconds()
		if float64(i) < done+n {
			return base + int64((float64(i)-done)/s.Rate*1e9)
		}
		done += n
		base += int64(s.For)
	}
	return base
}

// action fills a with request i of total (Plan.total). It reports false
// when there is none.
func (p *Plan) action(i, total int64, a *Action) bool {
	if p.Actions != nil {
		if i >= int64(len(p.Actions)) {
			return false
		}
		*a = p.Actions[i]
		return true
	}
	if total >= 0 && i >= total {
		return false
	}
	g := p.global(i)
	*a = Action{User: uint32(g % int64(max(p.Users, 1))), Item: uint16(g % int64(max(p.Items, 1)))}
	if len(p.Stages) > 0 {
		a.At = p.at(g)
	}
	return true
}
