package funnel

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"flashsale/sharding/api"
	"flashsale/sharding/ops/tool"
)

// Funnel is a sale's funnel as the gateways counted it (api.Funnel*):
// counts of answers, not of people, and not exact (a gateway restarted
// starts again from 0; a page a CDN served counts nowhere). Paid comes from
// PostgreSQL.
type Funnel struct {
	Source   string          `json:"source"` // "gateways" or "prometheus"
	Gateways []GatewayFunnel `json:"gateways"`
	Total    GatewayFunnel   `json:"total"`
	Paid     int64           `json:"paid"`
	// Errors name the gateways (or queries) that could not be read; the
	// rest is summed without them.
	Errors []string `json:"errors,omitempty"`
}

// GatewayFunnel is one gateway's counts (Total: summed).
type GatewayFunnel struct {
	Gateway   string           `json:"gateway"`
	PageLoads int64            `json:"pageLoads"`
	Admitted  int64            `json:"admitted"`
	Tickets   map[string]int64 `json:"tickets"`   // by answer (issued, queued, ...)
	Purchases map[string]int64 `json:"purchases"` // by answer (accepted: the 202s)
}

func newGatewayFunnel(name string) GatewayFunnel {
	return GatewayFunnel{Gateway: name, Tickets: map[string]int64{}, Purchases: map[string]int64{}}
}

// add adds one counter value: name is an api.Funnel* metric, answer its
// answer label ("" for the others).
func (g *GatewayFunnel) add(name, answer string, v int64) {
	switch name {
	case api.FunnelPageLoads:
		g.PageLoads += v
	case api.FunnelAdmissions:
		g.Admitted += v
	case api.FunnelTickets:
		g.Tickets[answer] += v
	case api.FunnelPurchases:
		g.Purchases[answer] += v
	}
}

func (f *Funnel) sum() {
	f.Total = newGatewayFunnel("all")
	for _, g := range f.Gateways {
		f.Total.PageLoads += g.PageLoads
		f.Total.Admitted += g.Admitted
		for k, v := range g.Tickets {
			f.Total.Tickets[k] += v
		}
		for k, v := range g.Purchases {
			f.Total.Purchases[k] += v
		}
	}
}

var funnelMetrics = []string{api.FunnelPageLoads, api.FunnelTickets, api.FunnelAdmissions, api.FunnelPurchases}

// funnelTimeout bounds the reading of one gateway or one Prometheus query.
const funnelTimeout = 10 * time.Second

// ReadGateways scrapes each gateway's admin /metrics (an address
// host:port, a base URL or the metrics URL itself) and keeps sale id's
// funnel counters.
func ReadGateways(ctx context.Context, c *http.Client, id int64, gateways []string) *Funnel {
	f := &Funnel{Source: "gateways", Gateways: []GatewayFunnel{}}
	for _, gw := range gateways {
		g, err := scrapeFunnel(ctx, c, id, MetricsURL(gw))
		if err != nil {
			f.Errors = append(f.Errors, fmt.Sprintf("gateway %s: %v", gw, err))
			continue
		}
		g.Gateway = gw
		f.Gateways = append(f.Gateways, g)
	}
	f.sum()
	return f
}

// MetricsURL makes an admin address into its metrics URL.
func MetricsURL(gw string) string {
	if !strings.Contains(gw, "://") {
		gw = "http://" + gw
	}
	if u, err := url.Parse(gw); err == nil && (u.Path == "" || u.Path == "/") {
		return strings.TrimSuffix(gw, "/") + "/metrics"
	}
	return gw
}

func scrapeFunnel(ctx context.Context, c *http.Client, id int64, u string) (GatewayFunnel, error) {
	g := newGatewayFunnel("")
	body, err := get(ctx, c, u)
	if err != nil {
		return g, err
	}
	defer body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(body)
	if err != nil {
		return g, fmt.Errorf("reading %s: %w", u, err)
	}
	sale := strconv.FormatInt(id, 10)
	for _, name := range funnelMetrics {
		for _, m := range fams[name].GetMetric() {
			labels := labelMap(m)
			if labels["sale"] != sale {
				continue
			}
			v, err := countValue(m.GetCounter().GetValue())
			if err != nil {
				return g, fmt.Errorf("%s %v: %w", name, labels, err)
			}
			g.add(name, labels["answer"], v)
		}
	}
	return g, nil
}

func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// countValue checks that a counter read from another process is a count: a
// whole number from 0 to 2^53.
func countValue(v float64) (int64, error) {
	if math.IsNaN(v) || v < 0 || v > 1<<53 || v != math.Trunc(v) {
		return 0, fmt.Errorf("counter value %v is not a count", v)
	}
	return int64(v), nil
}

// get fetches u within funnelTimeout; the caller closes the body.
func get(ctx context.Context, c *http.Client, u string) (io.ReadCloser, error) {
	ctx, cancel := context.WithTimeout(ctx, funnelTimeout)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return &cancelBody{ReadCloser: http.MaxBytesReader(nil, resp.Body, 64<<20), cancel: cancel}, nil
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	defer b.cancel()
	return b.ReadCloser.Close()
}

// Text renders the funnel: one row per gateway, then the sum.
func (f *Funnel) Text(w io.Writer) error {
	fmt.Fprintf(w, "\nfunnel (from the %s: counted answers, not people; not exact)\n", f.Source)
	tb := tool.NewTable(w, "gateway", "page loads", "tickets issued", "queued", "admitted", "purchases", "202s")
	for _, g := range append(append([]GatewayFunnel{}, f.Gateways...), f.Total) {
		tb.Row(g.Gateway, tool.Itoa(g.PageLoads), tool.Itoa(g.Tickets[api.AnswerIssued.String()]), tool.Itoa(g.Tickets[api.AnswerQueued.String()]),
			tool.Itoa(g.Admitted), tool.Itoa(SumValues(g.Purchases)), tool.Itoa(g.Purchases[api.AnswerAccepted.String()]))
	}
	if err := tb.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "  purchases by answer: %s\n  paid (PostgreSQL): %d\n", AnswersText(f.Total.Purchases), f.Paid)
	for _, e := range f.Errors {
		fmt.Fprintf(w, "  not read: %s\n", e)
	}
	return nil
}

// SumValues sums the counts of m.
func SumValues(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// AnswersText is the non-zero answers, largest first.
func AnswersText(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v > 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || (m[keys[i]] == m[keys[j]] && keys[i] < keys[j]) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
