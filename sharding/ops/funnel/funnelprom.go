package funnel

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// funnelRange is how far back a Prometheus query looks for a funnel series:
// a gateway drops a sale's series a minute after its last payment window
// closed, and Prometheus keeps the last values for its retention.
const funnelRange = "31d"

// ReadPrometheus reads sale id's funnel from Prometheus at base (its
// HTTP API): the last value of each series over funnelRange, summed per
// gateway (instance) and answer.
func ReadPrometheus(ctx context.Context, c *http.Client, id int64, base string) *Funnel {
	f := &Funnel{Source: "prometheus", Gateways: []GatewayFunnel{}}
	byGateway := map[string]*GatewayFunnel{}
	for _, name := range funnelMetrics {
		q := fmt.Sprintf(`sum by (instance, answer) (last_over_time(%s{sale="%d"}[%s]))`, name, id, funnelRange)
		rows, err := promQuery(ctx, c, base, q)
		if err != nil {
			f.Errors = append(f.Errors, fmt.Sprintf("prometheus %s: %v", name, err))
			continue
		}
		for _, r := range rows {
			g := byGateway[r.instance]
			if g == nil {
				gf := newGatewayFunnel(r.instance)
				g = &gf
				byGateway[r.instance] = g
			}
			g.add(name, r.answer, r.value)
		}
	}
	names := make([]string, 0, len(byGateway))
	for n := range byGateway {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f.Gateways = append(f.Gateways, *byGateway[n])
	}
	f.sum()
	return f
}

type promRow struct {
	instance, answer string
	value            int64
}

// promQuery runs an instant query and returns its vector, each value
// checked to be a count.
func promQuery(ctx context.Context, c *http.Client, base, q string) ([]promRow, error) {
	u := strings.TrimSuffix(base, "/") + "/api/v1/query?query=" + url.QueryEscape(q)
	body, err := get(ctx, c, u)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	var resp struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(body).Decode(&resp); err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if resp.Status != "success" || resp.Data.ResultType != "vector" {
		return nil, fmt.Errorf("status %q, result %q: %s", resp.Status, resp.Data.ResultType, resp.Error)
	}
	var out []promRow
	for _, r := range resp.Data.Result {
		s, ok := r.Value[1].(string)
		if !ok {
			return nil, fmt.Errorf("a sample value %v is not a string", r.Value[1])
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("a sample value %q: %w", s, err)
		}
		v, err := countValue(f)
		if err != nil {
			return nil, err
		}
		out = append(out, promRow{instance: r.Metric["instance"], answer: r.Metric["answer"], value: v})
	}
	return out, nil
}
