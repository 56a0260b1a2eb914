// Package api holds what the gateway and its clients (the bench, tests)
// share of the public API's wire format: the error codes of SPEC.md's API
// table, sent in bodies as {"error":"CODE"}. The gateway builds its answers
// from these constants and the bench counts responses by them, so a code
// cannot be added to one side only.
package api

// Error codes, in the order of SPEC.md's API section.
const (
	AlreadyPurchased = "ALREADY_PURCHASED"  // 409: the user holds an active order in this sale
	SoldOut          = "SOLD_OUT"           // 410: no stock left for the item
	Unauthorized     = "UNAUTHORIZED"       // 401: missing, malformed, expired or wrongly signed token
	SaleNotStarted   = "SALE_NOT_STARTED"   // 403: before the sale opens (with startsAt)
	SaleEnded        = "SALE_ENDED"         // 410: after the sale closes
	ItemNotFound     = "ITEM_NOT_FOUND"     // 404: unknown or malformed item id
	RateLimited      = "RATE_LIMITED"       // 429: per-IP or per-user bucket empty (with Retry-After)
	TicketRequired   = "TICKET_REQUIRED"    // 403: the sale requires a purchase ticket and none was sent
	TicketInvalid    = "TICKET_INVALID"     // 403: a bad, expired or other user's ticket
	SalePaused       = "SALE_PAUSED"        // 503: an operator paused the sale; nothing is reserved
	Unavailable      = "UNAVAILABLE"        // 503: Redis cannot be reached in time; nothing is reserved
	ProofRequired    = "PROOF_REQUIRED"     // 428: the ticket endpoint wants a proof of work first
	ProofInvalid     = "PROOF_INVALID"      // 403: a malformed, forged, other user's or too weak proof of work
	QueuePassInvalid = "QUEUE_PASS_INVALID" // 403: a malformed, forged, other user's or sale's queue pass
	NotSelected      = "NOT_SELECTED"       // 410: a raffle's place past its units (with place): never admitted
	EntriesClosed    = "ENTRIES_CLOSED"     // 403: a raffle's entries closed without this user
	PresaleOnly      = "PRESALE_ONLY"       // 403: the presale phase, and the token lacks its claim or list (with startsAt)
	PresaleSoldOut   = "PRESALE_SOLD_OUT"   // 403: the presale phase sold its cap (with startsAt of the general phase)
	NoDraw           = "NO_DRAW"            // 404: the sale has no draw (access "open")
	NotEntered       = "NOT_ENTERED"        // 404: the user has no entry in the sale's draw

	OrderNotFound  = "ORDER_NOT_FOUND" // 404: no such order, or another user's
	OrderExpired   = "ORDER_EXPIRED"   // 409: pay or cancel after the payment deadline
	OrderCancelled = "ORDER_CANCELLED" // 409: pay or cancel of a cancelled order
	OrderPaid      = "ORDER_PAID"      // 409: cancel (or a second pay) of a paid order
	OrderFailed    = "ORDER_FAILED"    // 409: pay or cancel of an order the hand-off failed

	SaleNotFound     = "SALE_NOT_FOUND"     // 404: unknown sale id
	NotFound         = "NOT_FOUND"          // 404: no such route
	MethodNotAllowed = "METHOD_NOT_ALLOWED" // 405: wrong method (with Allow)

	InvalidUserID = "INVALID_USER_ID" // 400: the development sign-in (-dev only) got no positive decimal user id

	// Requests the server could not read (they never reach the handler).
	BadRequest      = "BAD_REQUEST"       // 400: not parsable HTTP (a bad Content-Length, chunking, header bytes)
	BodyTooLarge    = "BODY_TOO_LARGE"    // 413: a body over the server's limit
	HeadersTooLarge = "HEADERS_TOO_LARGE" // 431: headers over the read buffer
	RequestTimeout  = "REQUEST_TIMEOUT"   // 408: the request was not read within the read timeout
)

// Codes lists every error code above, the order of the constants.
var Codes = []string{
	AlreadyPurchased, SoldOut, Unauthorized, SaleNotStarted, SaleEnded, ItemNotFound, RateLimited,
	TicketRequired, TicketInvalid, SalePaused, Unavailable, ProofRequired, ProofInvalid, QueuePassInvalid,
	NotSelected, EntriesClosed, PresaleOnly, PresaleSoldOut, NoDraw, NotEntered,
	OrderNotFound, OrderExpired, OrderCancelled, OrderPaid, OrderFailed,
	SaleNotFound, NotFound, MethodNotAllowed, InvalidUserID,
	BadRequest, BodyTooLarge, HeadersTooLarge, RequestTimeout,
}

// ErrorBody is the body {"error":"<code>"} of an answer that carries no other field.
func ErrorBody(code string) []byte { return []byte(`{"error":"` + code + `"}`) }

// Status is the HTTP status each code is sent with.
var Status = map[string]int{
	AlreadyPurchased: 409, SoldOut: 410, Unauthorized: 401, SaleNotStarted: 403, SaleEnded: 410,
	ItemNotFound: 404, RateLimited: 429, TicketRequired: 403, TicketInvalid: 403, SalePaused: 503,
	Unavailable: 503, ProofRequired: 428, ProofInvalid: 403, QueuePassInvalid: 403,
	NotSelected: 410, EntriesClosed: 403, PresaleOnly: 403, PresaleSoldOut: 403, NoDraw: 404, NotEntered: 404, OrderNotFound: 404, OrderExpired: 409, OrderCancelled: 409,
	OrderPaid: 409, OrderFailed: 409, SaleNotFound: 404, NotFound: 404, MethodNotAllowed: 405,
	InvalidUserID: 400, BadRequest: 400, BodyTooLarge: 413, HeadersTooLarge: 431, RequestTimeout: 408,
}
