//go:build !race

package obs

import (
	"testing"

	"flashsale/sharding/api"
)

func TestCountingDoesNotAllocate(t *testing.T) {
	m := New()
	n := testing.AllocsPerRun(1000, func() {
		m.Request(RoutePurchase, 410)
		m.Request(RouteOther, 418)
		m.RateLimited(true)
		m.Observe(RoutePurchase, 0.001)
		m.Voided(VoidVoided)
		m.JournalFull()
		f := m.Funnel(7)
		f.Purchase(api.AnswerSoldOut)
		f.Ticket(api.AnswerQueued)
		f.PageLoad()
	})
	if n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
