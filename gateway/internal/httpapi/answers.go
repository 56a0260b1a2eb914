package httpapi

import (
	"strconv"

	"github.com/valyala/fasthttp"

	"flashsale/sharding/api"
)

// answer is one kind of reply; answers holds its status and body. This table
// is the only place statuses are chosen.
type answer uint8

const (
	aOK answer = iota
	aAccepted
	aAlreadyPurchased
	aSoldOut
	aSaleEnded
	aSaleNotStarted
	aUnauthorized
	aItemNotFound
	aOrderNotFound
	aSaleNotFound
	aNotFound
	aMethodGet
	aMethodPost
	aRateLimited
	aUnavailable
	aOrderExpired
	aOrderCancelled
	aOrderPaid
	aOrderFailed
	aTicketRequired
	aTicketInvalid
	aSalePaused
	aQueued
	aProofRequired
	aProofInvalid
	aQueuePassInvalid
	aNotSelected
	aEntriesClosed
	aPresaleOnly
	aPresaleSoldOut
	aNoDraw
	aNotEntered
	aNotModified
	aBadRequest
	aUnparsable
	aBodyTooLarge
	aHeadersTooLarge
	aRequestTimeout
	numAnswers
)

type answerSpec struct {
	status int
	body   []byte // precomputed; nil when the handler writes its own
	allow  []byte // Allow header of a 405
}

var answers = [numAnswers]answerSpec{
	aOK:               {status: fasthttp.StatusOK},
	aAccepted:         {status: fasthttp.StatusAccepted},
	aAlreadyPurchased: {status: fasthttp.StatusConflict},
	aSoldOut:          {status: fasthttp.StatusGone, body: api.ErrorBody(api.SoldOut)},
	aSaleEnded:        {status: fasthttp.StatusGone, body: api.ErrorBody(api.SaleEnded)},
	aSaleNotStarted:   {status: fasthttp.StatusForbidden},
	aUnauthorized:     {status: fasthttp.StatusUnauthorized, body: api.ErrorBody(api.Unauthorized)},
	aItemNotFound:     {status: fasthttp.StatusNotFound, body: api.ErrorBody(api.ItemNotFound)},
	aOrderNotFound:    {status: fasthttp.StatusNotFound, body: api.ErrorBody(api.OrderNotFound)},
	aSaleNotFound:     {status: fasthttp.StatusNotFound, body: api.ErrorBody(api.SaleNotFound)},
	aNotFound:         {status: fasthttp.StatusNotFound, body: api.ErrorBody(api.NotFound)},
	aMethodGet:        {status: fasthttp.StatusMethodNotAllowed, body: api.ErrorBody(api.MethodNotAllowed), allow: []byte("GET, HEAD")},
	aMethodPost:       {status: fasthttp.StatusMethodNotAllowed, body: api.ErrorBody(api.MethodNotAllowed), allow: []byte("POST")},
	aRateLimited:      {status: fasthttp.StatusTooManyRequests, body: api.ErrorBody(api.RateLimited)},
	aUnavailable:      {status: fasthttp.StatusServiceUnavailable, body: api.ErrorBody(api.Unavailable)},
	aOrderExpired:     {status: fasthttp.StatusConflict, body: api.ErrorBody(api.OrderExpired)},
	aOrderCancelled:   {status: fasthttp.StatusConflict, body: api.ErrorBody(api.OrderCancelled)},
	aOrderPaid:        {status: fasthttp.StatusConflict, body: api.ErrorBody(api.OrderPaid)},
	aOrderFailed:      {status: fasthttp.StatusConflict, body: api.ErrorBody(api.OrderFailed)},
	aTicketRequired:   {status: fasthttp.StatusForbidden, body: api.ErrorBody(api.TicketRequired)},
	aTicketInvalid:    {status: fasthttp.StatusForbidden, body: api.ErrorBody(api.TicketInvalid)},
	aSalePaused:       {status: fasthttp.StatusServiceUnavailable, body: api.ErrorBody(api.SalePaused)},
	aQueued:           {status: fasthttp.StatusAccepted},
	aProofRequired:    {status: fasthttp.StatusPreconditionRequired},
	aProofInvalid:     {status: fasthttp.StatusForbidden, body: api.ErrorBody(api.ProofInvalid)},
	aQueuePassInvalid: {status: fasthttp.StatusForbidden, body: api.ErrorBody(api.QueuePassInvalid)},
	aNotSelected:      {status: fasthttp.StatusGone},
	aEntriesClosed:    {status: fasthttp.StatusForbidden, body: api.ErrorBody(api.EntriesClosed)},
	aPresaleOnly:      {status: fasthttp.StatusForbidden},
	aPresaleSoldOut:   {status: fasthttp.StatusForbidden},
	aNoDraw:           {status: fasthttp.StatusNotFound, body: api.ErrorBody(api.NoDraw)},
	aNotEntered:       {status: fasthttp.StatusNotFound, body: api.ErrorBody(api.NotEntered)},
	aNotModified:      {status: fasthttp.StatusNotModified},
	aBadRequest:       {status: fasthttp.StatusBadRequest, body: api.ErrorBody(api.InvalidUserID)},
	aUnparsable:       {status: fasthttp.StatusBadRequest, body: api.ErrorBody(api.BadRequest)},
	aBodyTooLarge:     {status: fasthttp.StatusRequestEntityTooLarge, body: api.ErrorBody(api.BodyTooLarge)},
	aHeadersTooLarge:  {status: fasthttp.StatusRequestHeaderFieldsTooLarge, body: api.ErrorBody(api.HeadersTooLarge)},
	aRequestTimeout:   {status: fasthttp.StatusRequestTimeout, body: api.ErrorBody(api.RequestTimeout)},
}

// Header names and values, in the forms the handler writes or looks up.
var (
	hdrIdem         = []byte("Idempotency-Key")
	hdrIdemLower    = []byte("idempotency-key")
	hdrRetryAfter   = []byte("Retry-After")
	hdrAllow        = []byte("Allow")
	hdrCacheControl = []byte("Cache-Control")
	hdrTicket       = []byte("X-Purchase-Ticket")
	hdrTicketLower  = []byte("x-purchase-ticket")
)

var (
	contentJSON     = []byte("application/json")
	valCacheControl = []byte("public, max-age=1")
	valNoStore      = []byte("no-store")
	// retryAfter[n] is the decimal text of n seconds, up to one hour.
	retryAfter = func() [][]byte {
		out := make([][]byte, 3601)
		for i := range out {
			out[i] = []byte(strconv.Itoa(i))
		}
		return out
	}()
)
