package httpapi

import (
	"bytes"
	"strconv"
	"testing"

	"flashsale/gateway/internal/obs"
)

// FuzzRoute checks that Route never panics, that the id it returns is a
// subslice of the path without a slash, and that a well-formed purchase path
// round-trips.
func FuzzRoute(f *testing.F) {
	for _, s := range []string{
		"/api/flash-sales/items/7/purchase", "/api/flash-sales/orders/0000004d-0000-8000-8000-000000000001",
		"/api/flash-sales/orders/x/pay", "/api/flash-sales/orders/x/cancel", "/api/flash-sales/sales/77",
		"/api/flash-sales/", "/api/flash-sales/items//purchase", "/", "", "/api/flash-sales/sales/1/",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, path []byte) {
		r, id := Route(path)
		if r == obs.RouteOther {
			if id != nil {
				t.Fatalf("unknown route with id %q", id)
			}
			return
		}
		if bytes.IndexByte(id, '/') >= 0 || !bytes.Contains(path, id) {
			t.Fatalf("id %q of %q", id, path)
		}
		if r == obs.RoutePurchase {
			if n, ok := parseID(id); ok {
				again := "/api/flash-sales/items/" + strconv.FormatInt(n, 10) + "/purchase"
				if again != string(path) {
					t.Fatalf("%q parsed to %d, which prints as %q", path, n, again)
				}
			}
		}
	})
}

func FuzzParseID(f *testing.F) {
	for _, s := range []string{"1", "0", "01", "9223372036854775807", "9223372036854775808", "-1", "+1", " 1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := parseID([]byte(s))
		want, err := strconv.ParseInt(s, 10, 64)
		wantOK := err == nil && want > 0 && strconv.FormatInt(want, 10) == s
		if ok != wantOK || (ok && n != want) {
			t.Fatalf("parseID(%q) = %d, %v; strconv says %d, %v", s, n, ok, want, wantOK)
		}
	})
}
