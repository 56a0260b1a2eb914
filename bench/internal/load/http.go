package load

import (
	"bytes"
	"errors"
	"strconv"

	"flashsale/sharding"
)

// Kind is what an Action asks the gateway to do.
type Kind uint8

// Kinds of actions.
const (
	// Purchase posts a purchase click for an item.
	Purchase Kind = iota
	// Pay pays an order that a purchase reserved.
	Pay
	// Cancel cancels an order that a purchase reserved.
	Cancel
	// GetOrder reads an order.
	GetOrder
	numKinds
)

// String returns the kind's name as the reports show it.
func (k Kind) String() string {
	switch k {
	case Purchase:
		return "purchase"
	case Pay:
		return "pay"
	case Cancel:
		return "cancel"
	case GetOrder:
		return "get-order"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// requestBuilder appends HTTP/1.1 requests to a buffer without allocating.
// It is built once per run and read concurrently by every worker.
type requestBuilder struct {
	// purchase[i] is the request line and Host header for item i.
	purchase [][]byte
	host     []byte
	tokens   Tokens
	xff      bool
	idemKey  bool
	runID    []byte
	// userBase is added to a user index to get the user id that XFF and
	// idempotency keys name.
	userBase uint64
}

func newRequestBuilder(host string, items []int64, tok Tokens, xff, idem bool, runID string, userBase uint64) *requestBuilder {
	b := &requestBuilder{host: []byte(host), tokens: tok, xff: xff, idemKey: idem, runID: []byte(runID), userBase: userBase}
	for _, id := range items {
		line := []byte("POST /api/flash-sales/items/")
		line = strconv.AppendInt(line, id, 10)
		line = append(line, "/purchase HTTP/1.1\r\nHost: "...)
		line = append(line, host...)
		line = append(line, "\r\n"...)
		b.purchase = append(b.purchase, line)
	}
	return b
}

// appendRequest appends the request for a to dst and returns the grown slice.
func (b *requestBuilder) appendRequest(dst []byte, a *Action) []byte {
	switch a.Kind {
	case Purchase:
		dst = append(dst, b.purchase[a.Item]...)
	default:
		if a.Kind == GetOrder {
			dst = append(dst, "GET /api/flash-sales/orders/"...)
		} else {
			dst = append(dst, "POST /api/flash-sales/orders/"...)
		}
		dst = sharding.OrderID(a.Order).AppendText(dst)
		switch a.Kind {
		case Pay:
			dst = append(dst, "/pay"...)
		case Cancel:
			dst = append(dst, "/cancel"...)
		}
		dst = append(dst, " HTTP/1.1\r\nHost: "...)
		dst = append(dst, b.host...)
		dst = append(dst, "\r\n"...)
	}
	if b.tokens != nil {
		dst = append(dst, "Authorization: Bearer "...)
		dst = append(dst, b.tokens.Token(int(a.User))...)
		dst = append(dst, "\r\n"...)
	}
	if b.xff {
		// A stable fake client address per user: 10.x.y.z from the user index.
		u := a.User
		dst = append(dst, "X-Forwarded-For: 10."...)
		dst = strconv.AppendUint(dst, uint64(u>>16&0xff), 10)
		dst = append(dst, '.')
		dst = strconv.AppendUint(dst, uint64(u>>8&0xff), 10)
		dst = append(dst, '.')
		dst = strconv.AppendUint(dst, uint64(u&0xff), 10)
		dst = append(dst, "\r\n"...)
	}
	if b.idemKey && a.Kind == Purchase {
		// One key per click: a retry of the same click repeats it, so the
		// gateway never creates a second order for it.
		dst = append(dst, "Idempotency-Key: "...)
		dst = append(dst, b.runID...)
		dst = append(dst, '-')
		dst = strconv.AppendUint(dst, b.userBase+uint64(a.User), 10)
		dst = append(dst, '-')
		dst = strconv.AppendUint(dst, uint64(a.Click), 10)
		dst = append(dst, "\r\n"...)
	}
	if a.Kind == GetOrder {
		return append(dst, "\r\n"...)
	}
	return append(dst, "Content-Length: 0\r\n\r\n"...)
}

// response is what parseResponse read from one HTTP/1.1 response. Body
// aliases the connection's read buffer and is valid until the next read.
type response struct {
	status     int
	body       []byte
	retryAfter int // seconds, 0 when absent
	close      bool
}

var (
	errMalformed = errors.New("malformed response")
	errChunked   = errors.New("chunked responses are not supported")
	errNoLength  = errors.New("response without Content-Length")
	errTooLarge  = errors.New("response larger than the read buffer")
)

// parseResponse parses the response at the start of b. It returns the number
// of bytes the response takes, or 0 when b does not hold all of it yet.
func parseResponse(b []byte, r *response) (int, error) {
	if len(b) < 12 {
		return 0, nil
	}
	st, ok := statusCode(b)
	if !ok {
		return 0, errMalformed
	}
	r.status, r.retryAfter, r.close = st, 0, b[7] == '0' // HTTP/1.0 closes by default
	cl := -1
	i := indexCRLF(b, 12)
	if i < 0 {
		return 0, nil
	}
	i += 2
	for {
		j := indexCRLF(b, i)
		if j < 0 {
			return 0, nil
		}
		if j == i { // end of headers
			i += 2
			break
		}
		if err := r.header(b[i:j], &cl); err != nil {
			return 0, err
		}
		i = j + 2
	}
	if cl < 0 {
		if st == 204 || st == 304 || st < 200 {
			cl = 0
		} else {
			return 0, errNoLength
		}
	}
	if len(b)-i < cl {
		return 0, nil
	}
	r.body = b[i : i+cl]
	return i + cl, nil
}

// statusCode reads the status of the status line at the start of b (at
// least 12 bytes): "HTTP/x.y NNN".
func statusCode(b []byte) (int, bool) {
	if b[0] != 'H' || b[1] != 'T' || b[2] != 'T' || b[3] != 'P' || b[4] != '/' || b[8] != ' ' {
		return 0, false
	}
	st := 0
	for _, c := range b[9:12] {
		if c < '0' || c > '9' {
			return 0, false
		}
		st = st*10 + int(c-'0')
	}
	return st, true
}

// header applies one header line: the body's length to cl, Retry-After and
// Connection to r; a chunked body is refused (the gateway never sends one).
func (r *response) header(line []byte, cl *int) error {
	switch {
	case hasPrefixFold(line, "content-length:"):
		n, ok := atoi(line[len("content-length:"):])
		if !ok {
			return errMalformed
		}
		*cl = n
	case hasPrefixFold(line, "retry-after:"):
		if n, ok := atoi(line[len("retry-after:"):]); ok {
			r.retryAfter = n
		}
	case hasPrefixFold(line, "connection:"):
		v := trim(line[len("connection:"):])
		if hasPrefixFold(v, "close") {
			r.close = true
		} else if hasPrefixFold(v, "keep-alive") {
			r.close = false
		}
	case hasPrefixFold(line, "transfer-encoding:"):
		return errChunked
	}
	return nil
}

func indexCRLF(b []byte, from int) int {
	for from < len(b) {
		i := bytes.IndexByte(b[from:], '\n')
		if i < 0 {
			return -1
		}
		i += from
		if i > 0 && b[i-1] == '\r' {
			return i - 1
		}
		from = i + 1
	}
	return -1
}

func hasPrefixFold(b []byte, lower string) bool {
	if len(b) < len(lower) {
		return false
	}
	for i := 0; i < len(lower); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func trim(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

func atoi(b []byte) (int, bool) {
	b = trim(b)
	if len(b) == 0 || len(b) > 12 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// jsonString returns the string value of the first member of body named key
// (given with its quotes, e.g. `"error"`), or nil. It does not unescape; the
// codes and ids it reads have no escapes.
func jsonString(body []byte, quotedKey string) []byte {
	n := len(quotedKey)
outer:
	for i := 0; i+n <= len(body); i++ {
		if body[i] != quotedKey[0] {
			continue
		}
		for k := 1; k < n; k++ {
			if body[i+k] != quotedKey[k] {
				continue outer
			}
		}
		j := i + n
		for j < len(body) && (body[j] == ' ' || body[j] == ':') {
			j++
		}
		if j >= len(body) || body[j] != '"' {
			continue
		}
		start := j + 1
		for j = start; j < len(body); j++ {
			if body[j] == '"' {
				return body[start:j]
			}
		}
		return nil
	}
	return nil
}
