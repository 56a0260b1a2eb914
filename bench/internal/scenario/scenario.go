// Package scenario turns the bench's configuration into a load.Plan: who sends
// what, when, and what each simulated user does with the answer.
//
//   - steady: purchases by users in turn, at a fixed rate (or a schedule of
//     rates) for a duration, or closed loop when no rate is given.
//   - flash-crowd: every user arrives once, about 95% of them within -ramp
//     (exponential arrivals with mean ramp/3, the way a crowd pours in when a
//     sale opens), clicks 1-3 times 100-600ms apart, some retry on 429/503
//     with backoff, winners pay, cancel or walk away.
//   - retry-storm: the same crowd, but every refused click (429, 503, 410,
//     5xx, transport failure) is retried at once, up to -retries times.
//   - bots: a few users, each connection bound to its own 127.0.0.x source
//     address, hammering closed loop (or at -rate) for -duration.
//
// With -shard i/N each of N instances builds the same schedule (same seed)
// and sends the requests of its users (u % N == i) at their times in it.
package scenario

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"flashsale/bench/internal/config"
	"flashsale/bench/internal/load"
)

// Build returns the plan for c over items item ids.
func Build(c *config.Config, items int, seed uint64) (*load.Plan, error) {
	if items <= 0 {
		return nil, fmt.Errorf("scenario: no items")
	}
	switch c.Scenario {
	case config.Steady, config.Bots:
		p := &load.Plan{Users: c.Users, Items: items, Count: c.Count, Slice: c.Shard, Slices: c.Shards}
		if c.Count == 0 {
			p.Duration = c.Duration
		}
		for _, s := range c.Rate {
			if s.For == 0 {
				s.For = c.Duration
			}
			p.Stages = append(p.Stages, load.Stage{Rate: s.Rate, For: s.For})
		}
		return p, nil
	case config.FlashCrowd, config.RetryStorm:
		p := &load.Plan{Users: c.Users, Items: items, Actions: slice(crowd(c, items, seed), c.Shard, c.Shards)}
		p.Follow = load.FollowUps{RetryFraction: c.RetryFraction, Retries: c.Retries, Backoff: c.Backoff,
			Pay: c.Pay, Cancel: c.Cancel, Think: c.Think}
		if c.Scenario == config.RetryStorm {
			p.Follow.RetryFraction, p.Follow.Backoff, p.Follow.RetryRefusals = 1, 0, true
		}
		return p, nil
	}
	return nil, fmt.Errorf("scenario: unknown scenario %q", c.Scenario)
}

// slice keeps the actions of the users u with u % n == i: one bench
// instance's share of a crowd that every instance draws the same.
func slice(all []load.Action, i, n int) []load.Action {
	if n <= 1 {
		return all
	}
	out := all[:0]
	for _, a := range all {
		if int(a.User)%n == i {
			out = append(out, a)
		}
	}
	return slices.Clip(out)
}

// crowd draws every user's arrival and clicks, sorted by intended send time.
func crowd(c *config.Config, items int, seed uint64) []load.Action {
	rng := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	mean := float64(c.Ramp) / 3
	out := make([]load.Action, 0, c.Users*(c.ClicksMin+c.ClicksMax)/2+c.Users)
	for u := 0; u < c.Users; u++ {
		t := -math.Log(1-rng.Float64()) * mean
		clicks := c.ClicksMin + rng.IntN(c.ClicksMax-c.ClicksMin+1)
		item := uint16(rng.IntN(items))
		for k := 0; k < clicks; k++ {
			if k > 0 {
				t += float64(100*time.Millisecond) + rng.Float64()*float64(500*time.Millisecond)
			}
			out = append(out, load.Action{At: int64(t), User: uint32(u), Item: item, Kind: load.Purchase, Click: uint8(k)})
		}
	}
	slices.SortFunc(out, func(a, b load.Action) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
	return out
}
