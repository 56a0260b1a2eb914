package httpapi

import (
	"strconv"

	"github.com/valyala/fasthttp"
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
	aSoldOut:          {status: fasthttp.StatusGone, body: errBody("SOLD_OUT")},
	aSaleEnded:        {status: fasthttp.StatusGone, body: errBody("SALE_ENDED")},
	aSaleNotStarted:   {status: fasthttp.StatusForbidden},
	aUnauthorized:     {status: fasthttp.StatusUnauthorized, body: errBody("UNAUTHORIZED")},
	aItemNotFound:     {status: fasthttp.StatusNotFound, body: errBody("ITEM_NOT_FOUND")},
	aOrderNotFound:    {status: fasthttp.StatusNotFound, body: errBody("ORDER_NOT_FOUND")},
	aSaleNotFound:     {status: fasthttp.StatusNotFound, body: errBody("SALE_NOT_FOUND")},
	aNotFound:         {status: fasthttp.StatusNotFound, body: errBody("NOT_FOUND")},
	aMethodGet:        {status: fasthttp.StatusMethodNotAllowed, body: errBody("METHOD_NOT_ALLOWED"), allow: []byte("GET")},
	aMethodPost:       {status: fasthttp.StatusMethodNotAllowed, body: errBody("METHOD_NOT_ALLOWED"), allow: []byte("POST")},
	aRateLimited:      {status: fasthttp.StatusTooManyRequests, body: errBody("RATE_LIMITED")},
	aUnavailable:      {status: fasthttp.StatusServiceUnavailable, body: errBody("UNAVAILABLE")},
	aOrderExpired:     {status: fasthttp.StatusConflict, body: errBody("ORDER_EXPIRED")},
	aOrderCancelled:   {status: fasthttp.StatusConflict, body: errBody("ORDER_CANCELLED")},
	aOrderPaid:        {status: fasthttp.StatusConflict, body: errBody("ORDER_PAID")},
	aOrderFailed:      {status: fasthttp.StatusConflict, body: errBody("ORDER_FAILED")},
}

func errBody(code string) []byte { return []byte(`{"error":"` + code + `"}`) }

// Header names and values, in the forms the handler writes or looks up.
var (
	hdrIdem         = []byte("Idempotency-Key")
	hdrIdemLower    = []byte("idempotency-key")
	hdrRetryAfter   = []byte("Retry-After")
	hdrAllow        = []byte("Allow")
	hdrCacheControl = []byte("Cache-Control")
)

var (
	contentJSON     = []byte("application/json")
	valCacheControl = []byte("public, max-age=1")
	// retryAfter[n] is the decimal text of n seconds, up to one hour.
	retryAfter = func() [][]byte {
		out := make([][]byte, 3601)
		for i := range out {
			out[i] = []byte(strconv.Itoa(i))
		}
		return out
	}()
)
