package obs

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"flashsale/sharding/api"
)

// The funnel counts by sale and answer; an answer a route does not give
// counts as other; ForgetSale drops the sale's funnel and no other's.
func TestFunnelCountsBySaleAndAnswer(t *testing.T) {
	m := New()
	m.Funnel(1).Purchase(api.AnswerAccepted)
	m.Funnel(1).Purchase(api.AnswerAccepted)
	m.Funnel(1).Purchase(api.AnswerQueued) // not a purchase answer
	m.Funnel(2).Purchase(api.AnswerSoldOut)
	m.Funnel(1).Ticket(api.AnswerIssued)
	m.Funnel(1).Admitted()
	m.Funnel(1).PageLoad()
	if first, again := m.Funnel(1), m.Funnel(1); first != again {
		t.Fatal("two funnels for one sale")
	}
	want := `
# HELP flashsale_gateway_funnel_purchases_total Purchase answers, by answer (accepted is the 202s).
# TYPE flashsale_gateway_funnel_purchases_total counter
`
	var b strings.Builder
	b.WriteString(want)
	for _, sale := range []string{"1", "2"} {
		for _, a := range api.PurchaseAnswers {
			n := map[string]map[api.FunnelAnswer]int{"1": {api.AnswerAccepted: 2, api.AnswerOther: 1}, "2": {api.AnswerSoldOut: 1}}[sale][a]
			b.WriteString(api.FunnelPurchases + `{answer="` + a.String() + `",sale="` + sale + `"} ` + string(rune('0'+n)) + "\n")
		}
	}
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(b.String()), api.FunnelPurchases); err != nil {
		t.Fatal(err)
	}
	pages := `
# HELP flashsale_gateway_funnel_page_loads_total Sale pages served (200 or 304) for a sale this gateway knows; a CDN's are not counted.
# TYPE flashsale_gateway_funnel_page_loads_total counter
flashsale_gateway_funnel_page_loads_total{sale="1"} 1
flashsale_gateway_funnel_page_loads_total{sale="2"} 0
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(pages), api.FunnelPageLoads); err != nil {
		t.Fatal(err)
	}
	m.ForgetSale(1, nil)
	if n, err := testutil.GatherAndCount(m.Registry, api.FunnelPurchases, api.FunnelTickets, api.FunnelPageLoads, api.FunnelAdmissions); err != nil ||
		n != len(api.PurchaseAnswers)+len(api.TicketAnswers)+2 {
		t.Fatalf("after forgetting sale 1: %d series (%v), want sale 2's %d", n, err, len(api.PurchaseAnswers)+len(api.TicketAnswers)+2)
	}
}
