package httpapi

import (
	"testing"

	"flashsale/sharding/api"
)

// funnelValue reads sale 77's funnel counter name with answer (none for a
// counter without the answer label); -1 when there is no such series.
func funnelValue(t *testing.T, h *Handler, name, answer string) float64 {
	t.Helper()
	fams, err := h.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["sale"] == "77" && labels["answer"] == answer {
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

// Each answer of the purchase and ticket routes counts once in the sale's
// funnel, under the answer it gave; the page counts for a sale the catalog
// holds only, so an unknown sale id makes no series.
func TestFunnelCountsEveryAnswer(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 1})
	c := e.serve("10.0.0.1")
	const buy = "/api/flash-sales/items/7/purchase"
	var users []uint64 // two users on shard 0, one on shard 1
	for u := uint64(1); len(users) < 3; u++ {
		if n := countHome(users, homeShard(u)); (homeShard(u) == 0 && n < 2) || (homeShard(u) == 1 && n < 1) {
			users = append(users, u)
		}
	}
	for _, u := range users {
		do(t, c, "POST", buy, e.token(u))
	}
	do(t, c, "POST", buy, e.token(users[0])) // the same user again
	do(t, c, "POST", buy, "")                // no token
	do(t, c, "POST", ticketPath, e.token(9))
	do(t, c, "GET", "/sale/77", "")
	do(t, c, "GET", "/sale/78", "")
	for answer, want := range map[api.FunnelAnswer]float64{api.AnswerAccepted: 2, api.AnswerSoldOut: 1,
		api.AnswerAlreadyPurchased: 1, api.AnswerUnauthorized: 1, api.AnswerPaused: 0} {
		if got := funnelValue(t, e.h, api.FunnelPurchases, answer.String()); got != want {
			t.Errorf("purchases answered %s: %v, want %v", answer, got, want)
		}
	}
	if got := funnelValue(t, e.h, api.FunnelTickets, api.AnswerIssued.String()); got != 1 {
		t.Errorf("tickets issued: %v, want 1", got)
	}
	if got := funnelValue(t, e.h, api.FunnelPageLoads, ""); got != 1 {
		t.Errorf("page loads: %v, want 1", got)
	}
	fams, _ := e.h.Metrics.Registry.Gather()
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "sale" && l.GetValue() == "78" {
					t.Fatalf("%s has a series for sale 78, which the catalog does not hold", f.GetName())
				}
			}
		}
	}
}

func countHome(users []uint64, shard int) int {
	n := 0
	for _, u := range users {
		if homeShard(u) == shard {
			n++
		}
	}
	return n
}

// The answers are told apart by body where a status is shared.
func TestFunnelAnswerNames(t *testing.T) {
	for _, tc := range []struct {
		ticket bool
		status int
		body   string
		want   api.FunnelAnswer
	}{
		{false, 410, `{"error":"SOLD_OUT"}`, api.AnswerSoldOut},
		{false, 410, `{"error":"SALE_ENDED"}`, api.AnswerSaleEnded},
		{false, 503, `{"error":"SALE_PAUSED"}`, api.AnswerPaused},
		{false, 503, `{"error":"UNAVAILABLE"}`, api.AnswerUnavailable},
		{false, 403, `{"error":"TICKET_REQUIRED"}`, api.AnswerTicketRequired},
		{false, 403, `{"error":"TICKET_INVALID"}`, api.AnswerTicketInvalid},
		{false, 403, `{"error":"SALE_NOT_STARTED","startsAt":"x"}`, api.AnswerNotStarted},
		{false, 500, ``, api.AnswerOther},
		{true, 202, `{"status":"QUEUED"}`, api.AnswerQueued},
		{true, 428, `{}`, api.AnswerProofRequired},
		{true, 403, `{"error":"SALE_NOT_STARTED","startsAt":"x"}`, api.AnswerNotStarted},
		{true, 403, `{"error":"PROOF_INVALID"}`, api.AnswerRefused},
		{true, 429, `{"error":"RATE_LIMITED"}`, api.AnswerRateLimited},
	} {
		got := purchaseAnswer(tc.status, []byte(tc.body))
		if tc.ticket {
			got = ticketAnswer(tc.status, []byte(tc.body))
		}
		if got != tc.want {
			t.Errorf("ticket %v %d %s: %s, want %s", tc.ticket, tc.status, tc.body, got, tc.want)
		}
	}
}
