package api

// The funnel of a sale, as every gateway counts it and exports it with a
// sale label: page loads, ticket answers, admissions from the waiting room
// or raffle and purchase answers. `flashctl sale report` sums them over the gateways
// (their admin /metrics, or Prometheus) by these names. They are counts of
// answers, not of people: a queued user's every poll counts, a page a CDN
// served counts nowhere.
const (
	// FunnelPageLoads counts the sale page served (200 or 304) for a sale
	// the gateway knows. Labels: sale.
	FunnelPageLoads = "flashsale_gateway_funnel_page_loads_total"
	// FunnelTickets counts the ticket endpoint's answers. Labels: sale,
	// answer (TicketAnswers).
	FunnelTickets = "flashsale_gateway_funnel_tickets_total"
	// FunnelAdmissions counts the users the waiting room or raffle admitted
	// (their ticket follows). Labels: sale.
	FunnelAdmissions = "flashsale_gateway_funnel_admissions_total"
	// FunnelPurchases counts the purchase answers. Labels: sale, answer
	// (PurchaseAnswers).
	FunnelPurchases = "flashsale_gateway_funnel_purchases_total"
)

// FunnelAnswer is the answer label of FunnelTickets and FunnelPurchases.
type FunnelAnswer uint8

// Funnel answers.
const (
	AnswerAccepted         FunnelAnswer = iota // purchase 202: reserved
	AnswerIssued                               // ticket 200: a ticket handed out
	AnswerQueued                               // ticket 202 QUEUED
	AnswerProofRequired                        // ticket 428 PROOF_REQUIRED
	AnswerAlreadyPurchased                     // purchase 409
	AnswerSoldOut                              // 410 SOLD_OUT
	AnswerSaleEnded                            // 410 SALE_ENDED
	AnswerNotStarted                           // 403 SALE_NOT_STARTED
	AnswerPaused                               // 503 SALE_PAUSED
	AnswerRateLimited                          // 429
	AnswerUnauthorized                         // 401
	AnswerTicketRequired                       // purchase 403 TICKET_REQUIRED
	AnswerTicketInvalid                        // purchase 403 TICKET_INVALID
	AnswerRefused                              // ticket 403: a bad proof or queue pass
	AnswerUnavailable                          // 503 UNAVAILABLE
	AnswerNotSelected                          // ticket 410 NOT_SELECTED, 403 ENTRIES_CLOSED: out of a raffle
	AnswerPresaleOnly                          // 403 PRESALE_ONLY or PRESALE_SOLD_OUT: the presale refused
	AnswerOther                                // anything else
	NumFunnelAnswers
)

var funnelAnswerNames = [NumFunnelAnswers]string{"accepted", "issued", "queued", "proof_required", "already_purchased",
	"sold_out", "sale_ended", "not_started", "paused", "rate_limited", "unauthorized", "ticket_required", "ticket_invalid",
	"refused", "unavailable", "not_selected", "presale_only", "other"}

// String is the answer's label value.
func (a FunnelAnswer) String() string {
	if a < NumFunnelAnswers {
		return funnelAnswerNames[a]
	}
	return "other"
}

// PurchaseAnswers and TicketAnswers are the answers each route exports.
var (
	PurchaseAnswers = []FunnelAnswer{AnswerAccepted, AnswerAlreadyPurchased, AnswerSoldOut, AnswerSaleEnded, AnswerNotStarted,
		AnswerPaused, AnswerRateLimited, AnswerUnauthorized, AnswerTicketRequired, AnswerTicketInvalid, AnswerUnavailable,
		AnswerPresaleOnly, AnswerOther}
	TicketAnswers = []FunnelAnswer{AnswerIssued, AnswerQueued, AnswerProofRequired, AnswerSoldOut, AnswerSaleEnded,
		AnswerNotStarted, AnswerPaused, AnswerRateLimited, AnswerUnauthorized, AnswerRefused, AnswerUnavailable,
		AnswerNotSelected, AnswerPresaleOnly, AnswerOther}
)
