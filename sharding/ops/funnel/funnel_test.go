package funnel

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"flashsale/sharding/api"
)

// gatewayMetrics serves a gateway's /metrics with sale 5's funnel (and sale
// 6's, which the report must leave out).
func gatewayMetrics(t *testing.T, accepted, soldOut string) *httptest.Server {
	t.Helper()
	body := fmt.Sprintf(`# TYPE %[1]s counter
%[1]s{answer="accepted",sale="5"} %[3]s
%[1]s{answer="sold_out",sale="5"} %[4]s
%[1]s{answer="accepted",sale="6"} 1000
# TYPE %[2]s counter
%[2]s{sale="5"} 7
`, api.FunnelPurchases, api.FunnelPageLoads, accepted, soldOut)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

// The funnel sums the gateways' counters of the sale; a gateway that does
// not answer, or answers with a value that is not a count, is named and
// left out.
func TestFunnelFromGateways(t *testing.T) {
	a, b := gatewayMetrics(t, "3", "10"), gatewayMetrics(t, "2", "5")
	bad := gatewayMetrics(t, "-1", "0")
	addr := strings.TrimPrefix(b.URL, "http://") // an admin address, no scheme
	f := ReadGateways(context.Background(), http.DefaultClient, 5, []string{a.URL, addr, bad.URL + "/metrics", "127.0.0.1:1"})
	if len(f.Gateways) != 2 || f.Total.Purchases["accepted"] != 5 || f.Total.Purchases["sold_out"] != 15 || f.Total.PageLoads != 14 {
		t.Fatalf("funnel %+v, want 2 gateways, 5 accepted, 15 sold out, 14 page loads", f)
	}
	if len(f.Errors) != 2 || !strings.Contains(f.Errors[0], "is not a count") || !strings.Contains(f.Errors[1], "127.0.0.1:1") {
		t.Fatalf("errors %q, want the bad value and the unreachable gateway named", f.Errors)
	}
}

// The funnel from Prometheus: the last value of each series per instance
// and answer; a query Prometheus refuses is named.
func TestFunnelFromPrometheus(t *testing.T) {
	var queries []string
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("query")
		queries = append(queries, q)
		switch {
		case strings.Contains(q, api.FunnelPurchases):
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[
				{"metric":{"instance":"g1","answer":"accepted"},"value":[1,"4"]},
				{"metric":{"instance":"g2","answer":"accepted"},"value":[1,"6"]}]}}`)
		case strings.Contains(q, api.FunnelTickets):
			fmt.Fprint(w, `{"status":"error","error":"bad query"}`)
		default:
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
		}
	}))
	defer prom.Close()
	f := ReadPrometheus(context.Background(), http.DefaultClient, 5, prom.URL)
	if len(f.Gateways) != 2 || f.Gateways[0].Gateway != "g1" || f.Total.Purchases["accepted"] != 10 || len(f.Errors) != 1 {
		t.Fatalf("funnel %+v", f)
	}
	if !strings.Contains(queries[0], `{sale="5"}[31d]`) || !strings.HasPrefix(queries[0], "sum by (instance, answer) (last_over_time(") {
		t.Fatalf("query %q", queries[0])
	}
}

func TestCountValue(t *testing.T) {
	for v, ok := range map[float64]bool{0: true, 12: true, 1 << 53: true, -1: false, 1.5: false, 1<<53 + 2: false} {
		if _, err := countValue(v); (err == nil) != ok {
			t.Errorf("countValue(%v): %v", v, err)
		}
	}
}

func TestMetricsURL(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:9": "http://127.0.0.1:9/metrics", "http://g:9/": "http://g:9/metrics",
		"https://g/admin/metrics": "https://g/admin/metrics",
	} {
		if got := MetricsURL(in); got != want {
			t.Errorf("MetricsURL(%q) = %q, want %q", in, got, want)
		}
	}
}
