package httpapi

import (
	"flashsale/gateway/internal/obs"
	"flashsale/sharding/draw"
)

const (
	apiPrefix  = "/api/flash-sales/"
	pagePrefix = "/sale/"
)

// Route maps a request path to its route and the path's id segment (an item,
// order or sale id, unparsed, a subslice of path; for the sale page, what
// follows "/sale/": a sale id or "assets/<name>"). Unknown paths give
// obs.RouteOther and a nil id. Route allocates nothing.
func Route(path []byte) (obs.Route, []byte) {
	if hasPrefix(path, pagePrefix) {
		return obs.RoutePage, path[len(pagePrefix):]
	}
	if string(path) == pagePrefix[:len(pagePrefix)-1] {
		return obs.RoutePage, nil // "/sale": the page, which says it names no sale
	}
	if len(path) <= len(apiPrefix) || string(path[:len(apiPrefix)]) != apiPrefix {
		return obs.RouteOther, nil
	}
	rest := path[len(apiPrefix):]
	switch {
	case string(rest) == "time":
		return obs.RouteTime, nil
	case string(rest) == "dev/token":
		return obs.RouteDev, nil
	case hasPrefix(rest, "items/"):
		seg, tail := segment(rest[len("items/"):])
		if string(tail) == "/purchase" {
			return obs.RoutePurchase, seg
		}
	case hasPrefix(rest, "orders/"):
		seg, tail := segment(rest[len("orders/"):])
		switch string(tail) {
		case "":
			if len(seg) > 0 {
				return obs.RouteOrder, seg
			}
		case "/pay":
			return obs.RoutePay, seg
		case "/cancel":
			return obs.RouteCancel, seg
		}
	case hasPrefix(rest, "sales/"):
		seg, tail := segment(rest[len("sales/"):])
		switch {
		case len(seg) == 0:
		case len(tail) == 0:
			return obs.RouteSale, seg
		case string(tail) == "/ticket":
			return obs.RouteTicket, seg
		case string(tail) == "/order":
			return obs.RouteHeld, seg
		case string(tail) == "/draw":
			return obs.RouteDraw, seg
		case string(tail) == "/draw/me":
			return obs.RouteDrawMe, seg
		case string(tail) == "/draw/log":
			return obs.RouteDrawLog, seg
		case hasPrefix(tail, "/draw/"): // /draw/{id}/pages/{k}, /draw/{id}/entries/{leaf}
			const n = len("/draw/") + 2*len(draw.Hash{})
			if len(tail) <= n || tail[n] != '/' {
				break
			}
			switch rest := tail[n+1:]; {
			case hasPrefix(rest, "pages/"):
				return obs.RouteDrawPage, seg
			case hasPrefix(rest, "entries/"):
				return obs.RouteDrawEntry, seg
			}
		}
	}
	return obs.RouteOther, nil
}

func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }

// segment splits b at its first '/': the segment before it and the rest,
// slash included.
func segment(b []byte) (seg, tail []byte) {
	for i, c := range b {
		if c == '/' {
			return b[:i], b[i:]
		}
	}
	return b, nil
}

// parseID parses a positive decimal int64 without sign, spaces or leading
// zeros beyond a single digit; anything else reports false.
func parseID(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 || (b[0] == '0') {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n > 1<<63-1 {
		return 0, false
	}
	return int64(n), true
}
