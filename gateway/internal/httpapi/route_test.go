package httpapi

import (
	"strings"
	"testing"

	"flashsale/gateway/internal/obs"
)

// TestRouteTable: every route's path, and near misses.
func TestRouteTable(t *testing.T) {
	id := strings.Repeat("ab", 32) // a draw's address
	for path, want := range map[string]obs.Route{
		"/api/flash-sales/sales/7":                             obs.RouteSale,
		"/api/flash-sales/sales/7/ticket":                      obs.RouteTicket,
		"/api/flash-sales/sales/7/order":                       obs.RouteHeld,
		"/api/flash-sales/sales/7/draw":                        obs.RouteDraw,
		"/api/flash-sales/sales/7/draw/me":                     obs.RouteDrawMe,
		"/api/flash-sales/sales/7/draw/log":                    obs.RouteDrawLog,
		"/api/flash-sales/sales/7/draw/logs":                   obs.RouteOther,
		"/api/flash-sales/sales/7/draw/entries/ab":             obs.RouteOther,
		"/api/flash-sales/sales/7/draw/" + id + "/entries/ab":  obs.RouteDrawEntry,
		"/api/flash-sales/sales/7/draw/" + id + "/pages/0":     obs.RouteDrawPage,
		"/api/flash-sales/sales/7/draw/" + id + "/pages":       obs.RouteOther,
		"/api/flash-sales/sales/7/draw/" + id + "/other/0":     obs.RouteOther,
		"/api/flash-sales/sales/7/draw/" + id[1:] + "/pages/0": obs.RouteOther,
		"/api/flash-sales/sales/7/draw/":                       obs.RouteOther,
		"/api/flash-sales/sales/7/draw/you":                    obs.RouteOther,
		"/api/flash-sales/sales/7/draws":                       obs.RouteOther,
		"/api/flash-sales/sales//draw":                         obs.RouteOther,
		"/api/flash-sales/items/3/purchase":                    obs.RoutePurchase,
		"/api/flash-sales/orders/x/pay":                        obs.RoutePay,
		"/api/flash-sales/time":                                obs.RouteTime,
		"/sale/7":                                              obs.RoutePage,
		"/api/flash-sales/sales/7/draw/me/x":                   obs.RouteOther,
	} {
		if got, _ := Route([]byte(path)); got != want {
			t.Errorf("%s: route %v, want %v", path, got, want)
		}
	}
}
