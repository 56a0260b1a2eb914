package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"flashsale/deploy/lab"
	"flashsale/deploy/testenv"
)

// TestLabDistances is a measurement, not a check (make lab-distances,
// FLASHSALE_LAB_DISTANCES=1): the demo sale (10,000 units over 8 shards,
// bench's flash crowd of 500,000 users) on the lab, once per round trip
// between the gateway and the Redis nodes, and between the nodes (replica
// to master, the cluster bus); the writer's links alike; Kafka's round trip
// FLASHSALE_LAB_KAFKA_RTT (1ms). Per round trip it logs the sell-out time,
// the 202's p50 and p99, the reservations per script call, the 202s a
// second per master and the relay's lag (the oldest journal entry's age,
// at its worst). FLASHSALE_LAB_RTTS lists the round trips (0,200us,500us,
// 1ms,2ms).
func TestLabDistances(t *testing.T) {
	if os.Getenv("FLASHSALE_LAB_DISTANCES") == "" {
		t.Skip("a measurement: FLASHSALE_LAB_DISTANCES=1 (make lab-distances)")
	}
	need(t)
	rtts, err := durations(envOr("FLASHSALE_LAB_RTTS", "0,200us,500us,1ms,2ms"))
	if err != nil {
		t.Fatal(err)
	}
	kafkaRTT, err := time.ParseDuration(envOr("FLASHSALE_LAB_KAFKA_RTT", "1ms"))
	if err != nil {
		t.Fatal(err)
	}
	users := envOr("FLASHSALE_LAB_USERS", "500000")
	l := lab.New(t)
	cl := l.StartRedis(6, labRedisBase)
	topic := "e2e-distance-" + randHex()
	k := newChaosKafka(t, false, topic)
	kafka := l.Host("kafka")
	var kafkaEnds []lab.Endpoint
	for _, b := range k.brokers {
		_, p, _ := strings.Cut(b, ":")
		kafkaEnds = append(kafkaEnds, lab.Endpoint{Host: kafka, Port: atoi(p)})
	}
	pgp, err := pgPort()
	if err != nil {
		t.Fatal(err)
	}
	pg := lab.Endpoint{Host: l.Host("postgres"), Port: atoi(pgp)}
	gh, wh := l.Host("gateway"), l.Host("writer")
	l.Connect(gh, append(cl.Endpoints(), kafkaEnds...)...)
	l.Connect(wh, append(append(cl.Endpoints(), kafkaEnds...), pg)...)
	redis, brokers := strings.Join(cl.Addrs(), ","), strings.Join(k.brokers, ",")
	startAs(t, wh.Gid, "writer", "run", "-topic", topic, "-dlq-topic", topic+".dlq", "-group", topic+"-writers",
		"-admin", "", "-kafka-brokers", brokers, "-redis", redis)
	g := &gateway{addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), admin: fmt.Sprintf("127.0.0.1:%d", freePort(t)), gid: gh.Gid}
	g.args = []string{"-listen", g.addr, "-admin", g.admin, "-topic", topic, "-jwt-secret", secret,
		"-trusted-proxies", "127.0.0.0/8", "-kafka-brokers", brokers, "-redis", redis}
	g.proc = startAs(t, g.gid, "gateway "+g.addr, g.args...)
	g.waitReady(t, 60*time.Second)
	rows := []string{"| round trip | sold out | 202 p50 | 202 p99 | reservations per call | 202/s per master | relay lag (worst) |", "|---|---|---|---|---|---|---|"}
	for _, rtt := range rtts {
		for _, link := range l.Links(nil, nil) {
			d := rtt / 2
			if link.To.Host == kafka {
				d = kafkaRTT / 2
			}
			if err := link.Heal(); err != nil {
				t.Fatal(err)
			}
			if d > 0 {
				if err := link.Delay(d, d/10); err != nil {
					t.Fatal(err)
				}
			}
		}
		s := createSaleWith(t, 10000, 8, -time.Second, map[string]any{"redis": cl.Addrs()})
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			code, _, err := fasthttp.GetTimeout(nil, fmt.Sprintf("http://%s/api/flash-sales/sales/%d", g.addr, s.ID), time.Second)
			if err == nil && code == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the gateway did not serve sale %d", s.ID)
			}
		}
		calls0, res0 := reserveCalls(t, g.admin)
		lag := watchLag(g.admin)
		out := filepath.Join(t.TempDir(), "bench")
		cmd := exec.Command(filepath.Join(binDir, "bench"), "-url", "http://"+g.addr, "-sale", strconv.FormatInt(s.ID, 10),
			"-scenario", "flash-crowd", "-users", users, "-c", "256", "-jwt-secret", secret, "-xff", "-out", out)
		cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("bench at %v: %v\n%s", rtt, err, b)
		}
		worst := lag()
		calls1, res1 := reserveCalls(t, g.admin)
		var r struct {
			Outcomes []struct {
				Name    string
				Latency struct{ P50, P99 float64 } `json:"latencyMs"`
			}
			Sales []struct {
				SoldOutS float64 `json:"soldOutSeconds"`
				FirstS   float64 `json:"firstAcceptedSeconds"`
				Ticks    []int64 `json:"ticks"` // 202s per 100 ms
			} `json:"sellOut"`
			Codes []struct {
				What  string
				Count int64
			}
		}
		b, err := os.ReadFile(filepath.Join(out, "result.json"))
		if err != nil || json.Unmarshal(b, &r) != nil || len(r.Sales) == 0 {
			t.Fatalf("bench's result at %v: %v", rtt, err)
		}
		var p50, p99 float64
		for _, o := range r.Outcomes {
			if o.Name == "202" {
				p50, p99 = o.Latency.P50, o.Latency.P99
			}
		}
		sold := r.Sales[0].SoldOutS
		var codes []string
		for _, c := range r.Codes {
			codes = append(codes, fmt.Sprintf("%s %d", c.What, c.Count))
		}
		var by2s int64
		for i, n := range r.Sales[0].Ticks {
			if i < 20 {
				by2s += n
			}
		}
		t.Logf("round trip %v: answers %s; %d units sold in the first 2 s", rtt, strings.Join(codes, ", "), by2s)
		per := 0.0
		if calls1 > calls0 {
			per = float64(res1-res0) / float64(calls1-calls0)
		}
		rate := 0.0
		if span := sold - r.Sales[0].FirstS; span > 0 {
			rate = 10000 / span / 3
		}
		rows = append(rows, fmt.Sprintf("| %v | %.3f s | %.1f ms | %.1f ms | %.2f | %.0f | %.2f s |", rtt, sold, p50, p99, per, rate, worst.Seconds()))
		t.Logf("round trip %v: sold out %.3f s, 202 p50 %.1f ms p99 %.1f ms, %.2f reservations per call, %.0f 202/s per master, relay lag %.2f s",
			rtt, sold, p50, p99, per, rate, worst.Seconds())
	}
	t.Log("\n" + strings.Join(rows, "\n"))
}

// reserveCalls reads the gateway's reserve script calls and the
// reservations they carried.
func reserveCalls(t *testing.T, admin string) (calls, reservations int64) {
	t.Helper()
	m := scrape(t, admin)
	return int64(m.sum("flashsale_gateway_reserve_calls_total", "")), int64(m.sum("flashsale_gateway_reserve_call_reservations_total", ""))
}

// watchLag samples the gateway's oldest journal entry age every 200 ms
// until the returned function is called, which answers the worst seen.
func watchLag(admin string) func() time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var worst float64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if v := maxMetric(admin, "flashsale_journal_oldest_age_seconds"); v > 0 {
				mu.Lock()
				worst = max(worst, v)
				mu.Unlock()
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	return func() time.Duration {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return time.Duration(worst * float64(time.Second))
	}
}

// maxMetric reads the largest sample of a metric from an admin listener
// (0 when it cannot).
func maxMetric(admin, name string) float64 {
	code, body, err := fasthttp.GetTimeout(nil, "http://"+admin+"/metrics", 2*time.Second)
	if err != nil || code != 200 {
		return 0
	}
	best := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name) {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			best = max(best, v)
		}
	}
	return best
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func durations(list string) ([]time.Duration, error) {
	var out []time.Duration
	for _, s := range strings.Split(list, ",") {
		if s == "0" {
			out = append(out, 0)
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, fmt.Errorf("round trips %q: %v", list, err)
		}
		out = append(out, d)
	}
	return out, nil
}

var _ = testenv.DatabaseURL
