package manifests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/sharding/ops/saleops"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

// TestPrometheusDashboard runs a real Prometheus (Debian's prometheus package)
// with the alert rules, scraping a real gateway and writer every second during
// a small flash crowd sent by the bench (300 users for 100 units). Then every
// query of the dashboard (panels and annotations, with its variables set to
// the sale) must return data, FlashsaleStockDrift must never have been pending
// or firing, and after two units are planted in a shard's stock it must fire.
func TestPrometheusDashboard(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: builds and runs the binaries and Prometheus")
	}
	testenv.Require(t, "redis", "postgres", "kafka")
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("FLASHSALE_REQUIRE_STACK") == "1" {
			t.Fatal("prometheus is missing: `make up` installs it (Debian package prometheus)")
		}
		t.Skip("prometheus is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin+string(filepath.Separator), "./gateway", "./writer", "./bench")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	s := promSale(t, ctx)
	id := strconv.FormatInt(s.ID, 10)
	topic := testenv.NewTopic(t, "deploy-prom")
	secret := randomHex(t)
	common := []string{"FLASHSALE_REDIS=" + strings.Join(testenv.RedisAddrs(), ","),
		"KAFKA_BROKERS=" + strings.Join(testenv.KafkaBrokers(), ","), "FLASHSALE_TOPIC=" + topic}
	public, gwAdmin, wrAdmin, promAddr := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	start(t, ctx, filepath.Join(bin, "gateway"), []string{"-trusted-proxies", "127.0.0.0/8"}, append(common,
		"FLASHSALE_LISTEN="+public, "FLASHSALE_ADMIN="+gwAdmin, "FLASHSALE_JWT_SECRET="+secret, "FLASHSALE_RELAY_SALES="+id))
	start(t, ctx, filepath.Join(bin, "writer"), []string{"run"}, append(common,
		"DATABASE_URL="+testenv.DatabaseURL(), "FLASHSALE_DLQ_TOPIC="+topic+".dlq", "FLASHSALE_GROUP="+topic+"-writer",
		"FLASHSALE_ADMIN="+wrAdmin, "FLASHSALE_SALES="+id, "FLASHSALE_MIGRATE=false"))
	startPrometheus(t, ctx, promBin, promAddr, gwAdmin, wrAdmin)
	p := promClient{base: "http://" + promAddr}
	p.waitFor(t, `up{job="flashsale"} == 1`, 2, 60*time.Second)
	waitURL(t, "http://"+public+"/api/flash-sales/sales/"+id, 30*time.Second)

	crowd := exec.CommandContext(ctx, filepath.Join(bin, "bench"), "-url", "http://"+public, "-sale", id, "-scenario", "flash-crowd",
		"-users", "300", "-ramp", "2s", "-c", "16", "-xff", "-jwt-secret", secret, "-out", t.TempDir())
	crowd.Env = append(os.Environ(), common...)
	if out, err := crowd.CombinedOutput(); err != nil {
		t.Fatalf("bench: %v\n%s", err, tail(out, 3000))
	}
	// The orders reach PostgreSQL and the rates have a few scrapes to work on.
	p.waitFor(t, `sum(flashsale_writer_orders_persisted_total) >= 100`, 1, 60*time.Second)
	// A pause and a resume, so the dashboard's pause annotation has something to show.
	st := stock.New(testenv.NewRedis(t))
	if _, err := st.SetState(ctx, s.ID, sale.StatePaused); err != nil {
		t.Fatal(err)
	}
	p.waitFor(t, `max(flashsale_gateway_sale_paused{sale="`+id+`"}) == 1`, 1, 20*time.Second)
	time.Sleep(3 * time.Second) // a few scrapes of it
	if _, err := st.SetState(ctx, s.ID, ""); err != nil {
		t.Fatal(err)
	}
	p.waitFor(t, `max(flashsale_gateway_sale_selling{sale="`+id+`"}) == 1`, 1, 20*time.Second)
	time.Sleep(6 * time.Second)

	vars := strings.NewReplacer("$__rate_interval", "10s", "$__range", "2m", "${datasource}", "", "$sale", id, "$item", ".*")
	for _, q := range dashboardQueries(t) {
		q.expr = vars.Replace(q.expr)
		n := 0
		if strings.HasPrefix(q.where, "annotation") {
			n = p.countRange(t, q.expr, 3*time.Minute) // Grafana asks annotations over the range shown
		} else {
			n = p.count(t, q.expr)
		}
		if n == 0 {
			t.Errorf("%s: %s returns no data", q.where, q.expr)
		}
	}
	if n := p.count(t, `max_over_time(ALERTS{alertname="FlashsaleStockDrift"}[5m])`); n != 0 {
		t.Errorf("FlashsaleStockDrift was pending or firing during a normal sale")
	}
	// Plant an oversell: two units too many on a shard.
	rc := testenv.NewRedis(t)
	key := string(sharding.AppendStockKey(nil, s.Shards[0], s.Items[0].ID))
	if err := rc.Do(ctx, rc.B().Incrby().Key(key).Increment(2).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	planted := time.Now()
	p.waitFor(t, `ALERTS{alertname="FlashsaleStockDrift",alertstate="firing",sale="`+id+`"}`, 1, 60*time.Second)
	t.Logf("FlashsaleStockDrift fired %v after the plant", time.Since(planted).Round(time.Second))
}

// promSale creates a started sale of 100 units over 4 shards in PostgreSQL and Redis.
func promSale(t *testing.T, ctx context.Context) *sale.Sale {
	t.Helper()
	id := randomID(t)
	s := &sale.Sale{ID: id, Name: "deploy-manifests prometheus", StartsAt: time.Now().Add(-time.Second), EndsAt: time.Now().Add(time.Hour),
		PaymentWindow: sale.Duration(10 * time.Minute),
		Items:         []sale.Item{{ID: id*10 + 1, Name: "probe", Price: 100, Currency: "EUR", Quantity: 100}}}
	rc := testenv.NewRedis(t)
	pool := testenv.NewPool(t)
	if err := saleops.CreateSale(ctx, pool, stock.New(rc), s, 4); err != nil {
		t.Fatalf("creating sale %d: %v", id, err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rc.Do(c, rc.B().Srem().Key(sharding.SalesKey).Member(strconv.FormatInt(id, 10)).Build())
	})
	return s
}

// startPrometheus runs Prometheus with the alert rules, scraping the two admin
// addresses every second.
func startPrometheus(t *testing.T, ctx context.Context, bin, addr, gw, wr string) {
	t.Helper()
	dir := t.TempDir()
	rules, err := filepath.Abs(filepath.Join(repoRoot, alertsFile))
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
  - job_name: flashsale
    static_configs: [{targets: [%q, %q]}]
`, rules, gw, wr)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	start(t, ctx, bin, []string{"--config.file=" + filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr}, nil)
}

type promClient struct{ base string }

// count returns how many series the instant query expr answers.
func (p promClient) count(t *testing.T, expr string) int {
	t.Helper()
	return p.get(t, expr, "/api/v1/query?query="+url.QueryEscape(expr))
}

// countRange returns how many series the range query expr answers over the
// last span, at a 1 s step.
func (p promClient) countRange(t *testing.T, expr string, span time.Duration) int {
	t.Helper()
	now := time.Now()
	return p.get(t, expr, fmt.Sprintf("/api/v1/query_range?query=%s&start=%d&end=%d&step=1", url.QueryEscape(expr), now.Add(-span).Unix(), now.Unix()))
}

func (p promClient) get(t *testing.T, expr, path string) int {
	t.Helper()
	resp, err := http.Get(p.base + path)
	if err != nil {
		t.Fatalf("query %s: %v", expr, err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" {
		t.Fatalf("query %s: %v %s %s", expr, err, r.Status, r.Error)
	}
	return len(r.Data.Result)
}

// waitFor polls until expr answers at least n series.
func (p promClient) waitFor(t *testing.T, expr string, n int, wait time.Duration) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		if resp, err := http.Get(p.base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 && p.count(t, expr) >= n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus: %s did not answer %d series within %v", expr, n, wait)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func waitURL(t *testing.T, u string, wait time.Duration) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer 200 within %v", u, wait)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type dashQuery struct{ where, expr string }

// dashboardQueries returns every query of the dashboard: each panel target and
// each annotation.
func dashboardQueries(t *testing.T) []dashQuery {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Annotations struct {
			List []struct {
				Name string `json:"name"`
				Expr string `json:"expr"`
			} `json:"list"`
		} `json:"annotations"`
		Panels []grafanaPanel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var out []dashQuery
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				out = append(out, dashQuery{"panel " + p.Title, tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, a := range d.Annotations.List {
		out = append(out, dashQuery{"annotation " + a.Name, a.Expr})
	}
	if len(out) < 30 {
		t.Fatalf("only %d dashboard queries found", len(out))
	}
	return out
}
