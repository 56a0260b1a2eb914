//go:build !race

package journal_test

import (
	"context"
	"testing"
	"time"

	"flashsale/deploy/testenv"
	"flashsale/sharding/journal"
)

// Fence.Fresh is on the purchase path: it allocates nothing.
func TestFenceFreshDoesNotAllocate(t *testing.T) {
	c := testenv.LoneRedis(t)
	tag := "s1v1:0:0"
	f := journal.NewFence(c, journal.FenceConfig{Tags: func() []string { return []string{tag} }})
	if err := f.Beat(context.Background()); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if n := testing.AllocsPerRun(1000, func() {
		if !f.Fresh(tag, now) {
			t.Fatal("not fresh")
		}
	}); n != 0 {
		t.Fatalf("%v allocations per Fresh, want 0", n)
	}
}
