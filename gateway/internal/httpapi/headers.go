package httpapi

import (
	"github.com/valyala/fasthttp"

	"flashsale/gateway/internal/auth"
)

// maxXFFLines is the most X-Forwarded-For lines read; a request with more is
// keyed on its TCP peer (a client adding lines gains nothing then: it shares
// its proxy's bucket).
const maxXFFLines = 16

// bearer returns the bearer token of the request's one Authorization header.
// Header names are kept as received, so every spelling is looked at: a
// request with two or more Authorization headers in any spelling has no
// token (401), since the proxy in front and this gateway might each read a
// different one. It allocates nothing.
func bearer(h *fasthttp.RequestHeader) ([]byte, bool) {
	var v []byte
	n := 0
	for k, val := range h.All() {
		if equalFoldLower(k, "authorization") {
			n++
			v = val
		}
	}
	if n != 1 {
		return nil, false
	}
	return auth.Bearer(v)
}

// xffLines returns every X-Forwarded-For line of the request, any spelling,
// in the order received, in dst's backing array; ok is false when there are
// more than maxXFFLines.
func xffLines(h *fasthttp.RequestHeader, dst *[maxXFFLines][]byte) (lines [][]byte, ok bool) {
	n := 0
	for k, val := range h.All() {
		if equalFoldLower(k, "x-forwarded-for") {
			if n < maxXFFLines {
				dst[n] = val
			}
			n++
		}
	}
	if n > maxXFFLines {
		return nil, false
	}
	return dst[:n], true
}

// equalFoldLower reports whether b equals lower (all lower case ASCII) in
// ASCII case-insensitive comparison.
func equalFoldLower(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := 0; i < len(b); i++ {
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
