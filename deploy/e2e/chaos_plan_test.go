package e2e_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// A chaos run's bounds come from the environment; each bad value is refused
// with the variable named, and no value is the fixed run of make test.
func TestChaosConfig(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	c, err := chaosConfigFrom(env())
	if err != nil || c.seed != chaosDefaultSeed || c.duration != 40*time.Second || c.faults != 10 || len(c.kinds) != len(chaosKinds) || !c.rush {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = chaosConfigFrom(env("FLASHSALE_CHAOS_SEED", "9", "FLASHSALE_CHAOS_DURATION", "1m", "FLASHSALE_CHAOS_FAULTS", "3",
		"FLASHSALE_CHAOS_KINDS", "pause,master-kill", "FLASHSALE_CHAOS_RUSH", "0"))
	if err != nil || c.seed != 9 || c.duration != time.Minute || c.faults != 3 || strings.Join(c.kinds, ",") != "pause,master-kill" || c.rush {
		t.Fatalf("set: %+v %v", c, err)
	}
	for _, bad := range [][]string{
		{"FLASHSALE_CHAOS_SEED", "x"}, {"FLASHSALE_CHAOS_SEED", "-1"},
		{"FLASHSALE_CHAOS_DURATION", "5s"}, {"FLASHSALE_CHAOS_DURATION", "2h"}, {"FLASHSALE_CHAOS_DURATION", "soon"},
		{"FLASHSALE_CHAOS_FAULTS", "-2"}, {"FLASHSALE_CHAOS_KINDS", "pause,meteor"}, {"FLASHSALE_CHAOS_RUSH", "yes"},
	} {
		if _, err := chaosConfigFrom(env(bad...)); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%s=%s: %v, want an error naming the variable", bad[0], bad[1], err)
		}
	}
}

// The same seed draws the same schedule, and make test's seed draws the
// faults that test the void (a gateway cut off from a master, a master
// frozen past its failover) and the hand-off (a partition leader failing
// over, a reshard while Kafka is down, partitions added).
func TestChaosDefaultPlan(t *testing.T) {
	cfg, _ := chaosConfigFrom(func(string) string { return "" })
	plan := planFaults(rand.New(rand.NewPCG(cfg.seed, 1)), cfg)
	again := planFaults(rand.New(rand.NewPCG(cfg.seed, 1)), cfg)
	n := map[string]int{}
	for i, f := range plan {
		if f.String() != again[i].String() {
			t.Fatalf("fault %d: %s, then %s", i, f, again[i])
		}
		n[f.kind]++
		if f.at < 2*time.Second || f.at > cfg.duration-3*time.Second {
			t.Errorf("%s: outside the run", f)
		}
	}
	if n["partition-gateway"] == 0 || n["master-freeze"] == 0 || n["leader-failover"] == 0 || n["reshard-kafka-down"] == 0 || n["partitions-grow"] == 0 ||
		len(plan) > cfg.faults || !needsCluster(plan) {
		t.Errorf("seed %d plans %v (%d faults, at most %d)", cfg.seed, n, len(plan), cfg.faults)
	}
}

// make test's lab seed draws a latency spike, a one-way cut and a clock bump
// (issue 56's floor for the fixed run), and the same schedule every time.
func TestLabDefaultPlan(t *testing.T) {
	cfg, err := chaosConfigWith(func(string) string { return "" }, chaosConfig{seed: labDefaultSeed, duration: 40 * time.Second, kinds: labKinds, rush: true})
	if err != nil {
		t.Fatal(err)
	}
	plan := planLab(rand.New(rand.NewPCG(cfg.seed, 1)), cfg)
	again := planLab(rand.New(rand.NewPCG(cfg.seed, 1)), cfg)
	n := map[string]int{}
	for i, f := range plan {
		if f.String() != again[i].String() {
			t.Fatalf("fault %d: %s, then %s", i, f, again[i])
		}
		n[f.kind]++
	}
	if n["latency-spike"] == 0 || n["one-way-cut"] == 0 || n["clock-bump"] == 0 {
		t.Errorf("seed %d plans %v: want a latency spike, a one-way cut and a clock bump", cfg.seed, n)
	}
}
