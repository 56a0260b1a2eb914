package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"
	"github.com/valyala/fasthttp"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/sharding/ops/ledger"
	"flashsale/sharding/stock"
	"flashsale/writer/schema"
)

// ledgerSale is a sale driven through every flow for the closing ledger.
type ledgerSale struct {
	*createdSale
	topic    string
	a, b     *gateway
	pool     *pgxpool.Pool
	rs       *stock.Store
	accepted int // 202s the test was answered, over both gateways
}

// TestLedgerEveryFlow drives a sale of 20 units over 4 shards through every
// flow the closing ledger accounts for, on the real binaries: purchases with
// borrows between shards (8 buyers homed on a shard of 5 units), pays,
// cancels, a FAILED order (a buyer whose record Redis lost buys again), a
// pause and a resume, a reshard to 2 shards, expiries whose units sell
// again, a planted ghost the writer's sweep reclaims, and the end. Then
// `flashctl sale report` must balance, exit 0, match a hand count from SQL
// and Redis, give the same hash twice and render a page a real Chromium
// screenshots; and three planted faults (a unit taken from a shard, a PAID
// order's buyer record dropped, order rows deleted) must each make it exit
// 1 naming the orders, the books balancing again, with the same hash, once
// the first two are undone.
func TestLedgerEveryFlow(t *testing.T) {
	need(t)
	l := newLedgerSale(t)
	l.drive(t)
	rep := l.waitSettled(t, 90*time.Second)
	l.checkHandCount(t, rep)
	l.checkFunnelAndTiming(t, rep)
	page := filepath.Join(t.TempDir(), "report.html")
	code, out, _ := l.report(t, "--html", page)
	if code != 0 || !strings.Contains(out, "ledger hash "+rep.Hash+"\n") || !strings.Contains(out, "LEDGER BALANCED") {
		t.Fatalf("a second report: exit %d, want 0 and the hash %s:\n%s", code, rep.Hash, out)
	}
	screenshotReport(t, page)
	l.plantFaults(t, rep)
}

func newLedgerSale(t *testing.T) *ledgerSale {
	t.Helper()
	// A payment window long enough for the flows before the expiries to
	// finish under a loaded machine, short enough for the test.
	s := createSaleWith(t, 20, 4, -time.Second, map[string]any{"paymentWindow": "15s"})
	l := &ledgerSale{createdSale: s, topic: "ledger-" + randHex(), pool: testenv.NewPool(t), rs: stock.New(testenv.NewRedis(t))}
	startWriter(t, l.topic, s.ID, "-ghost-interval", "1s", "-ghost-grace", "10s")
	l.a, l.b = startGateway(t, l.topic, s), startGateway(t, l.topic, s)
	l.a.waitReady(t, 30*time.Second)
	l.b.waitReady(t, 30*time.Second)
	return l
}

// drive runs the flows, in the order the ledger must untangle them.
func (l *ledgerSale) drive(t *testing.T) {
	for _, g := range []*gateway{l.a, l.b} { // the funnel's page loads and tickets
		if code, _, err := fasthttp.Get(nil, "http://"+g.addr+"/sale/"+strconv.FormatInt(l.ID, 10)); err != nil || code != 200 {
			t.Fatalf("sale page: %d %v", code, err)
		}
		if code := l.ticket(g, crowd(t, 1)[0]); code != 200 {
			t.Fatalf("ticket: %d, want 200", code)
		}
	}
	buyers := l.homed(t, 4, map[int]int{0: 8, 1: 4, 2: 4, 3: 4})
	orders := l.buyAll(t, buyers)
	for i := 0; i < 8; i++ {
		l.act(t, buyers[i], orders[i], "pay")
	}
	for i := 8; i < 11; i++ {
		l.act(t, buyers[i], orders[i], "cancel")
	}
	l.waitFor(t, "the pays and cancels", func() bool { return l.count(t, "PAID") == 8 && l.count(t, "CANCELLED") == 3 && l.unsold(t) == 3 })
	l.failedOrder(t, buyers[19])
	l.flashctl(t, 0, "sale", "pause", "--sale", strconv.FormatInt(l.ID, 10))
	l.flashctl(t, 0, "sale", "resume", "--sale", strconv.FormatInt(l.ID, 10))
	l.flashctl(t, 0, "reshard", "--sale", strconv.FormatInt(l.ID, 10), "--shards", "2")
	l.reload(t)
	ghost := l.plantGhost(t)
	// Buyers 11..19 never pay: their 15 s run out and their units sell again.
	l.waitFor(t, "the expiries", func() bool { return l.count(t, "EXPIRED") == 9 && l.unsold(t) >= 11 })
	again := l.homed(t, 2, map[int]int{0: 3, 1: 2})
	for i, o := range l.buyAll(t, again) {
		l.act(t, again[i], o, "pay")
	}
	l.waitFor(t, "the ghost reclaimed", func() bool {
		var st string
		err := l.pool.QueryRow(context.Background(), `SELECT status FROM orders WHERE id = $1`, ghost.String()).Scan(&st)
		return err == nil && st == "FAILED"
	})
	l.flashctl(t, 0, "sale", "end", "--sale", strconv.FormatInt(l.ID, 10))
}

// homed returns new buyers, want[i] of them homed on shard i of n.
func (l *ledgerSale) homed(t *testing.T, n int, want map[int]int) []buyer {
	t.Helper()
	var out []buyer
	for _, b := range crowd(t, 400) {
		if h := sharding.HomeShard(b.user, l.ID, n); want[h] > 0 {
			want[h]--
			out = append(out, b)
		}
	}
	for h, n := range want {
		if n > 0 {
			t.Fatalf("no user homed on shard %d among 400", h)
		}
	}
	return out
}

// buyAll buys for each buyer, on the two gateways in turn, trying again
// while again says so, and wants a 202 for each; it returns their order ids.
func (l *ledgerSale) buyAll(t *testing.T, buyers []buyer) []string {
	t.Helper()
	out := make([]string, len(buyers))
	for i, b := range buyers {
		g := []*gateway{l.a, l.b}[i%2]
		ans := purchase(g.addr, l.createdSale, b)
		begin := time.Now()
		for again(ans, begin) {
			time.Sleep(100 * time.Millisecond)
			ans = purchase(g.addr, l.createdSale, b)
		}
		if ans.status != 202 {
			t.Fatalf("buyer %d: %d %s, want 202", i, ans.status, ans.body)
		}
		l.accepted++
		out[i] = ans.order
	}
	return out
}

// again reports whether buyAll tries a purchase begun at begin once more: a
// 503 (a reshard's freeze, a borrow past its budget) for 10 s, and a 410 for
// 2 s, the staleness SPEC allows the sold-out flag after units came back
// (one stock poll, a second: the gateway flagged the item when the twenty
// buyers took every unit, and the cancels' units are back since).
func again(ans answer, begin time.Time) bool {
	switch since := time.Since(begin); ans.status {
	case 503:
		return since < 10*time.Second
	case 410:
		return since < 2*time.Second
	}
	return false
}

func (l *ledgerSale) act(t *testing.T, b buyer, order, what string) {
	t.Helper()
	if code := act(l.a.addr, b, order, what); code != 202 {
		t.Fatalf("%s of %s: %d, want 202", what, order, code)
	}
}

func (l *ledgerSale) ticket(g *gateway, b buyer) int {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod("POST")
	req.SetRequestURI("http://" + g.addr + "/api/flash-sales/sales/" + strconv.FormatInt(l.ID, 10) + "/ticket")
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("X-Forwarded-For", b.ip)
	if err := client.DoTimeout(req, resp, 10*time.Second); err != nil {
		return 0
	}
	return resp.StatusCode()
}

// failedOrder makes b's next purchase a FAILED order: Redis loses b's buyer
// record (as a failover might), b buys again and is answered 202, and the
// writer refuses the second active order, returning its unit.
func (l *ledgerSale) failedOrder(t *testing.T, b buyer) {
	t.Helper()
	ctx := context.Background()
	c := l.rs.Client()
	tag := l.Shards[sharding.HomeShard(b.user, l.ID, len(l.Shards))]
	if err := c.Do(ctx, c.B().Hdel().Key(string(sharding.AppendBuyersKey(nil, tag))).Field(strconv.FormatUint(b.user, 10)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	l.buyAll(t, []buyer{b})
	l.waitFor(t, "the second order FAILED and its unit back", func() bool {
		var n int
		err := l.pool.QueryRow(ctx, `SELECT count(*) FROM orders o JOIN releases r ON r.order_id = o.id
			WHERE o.sale_id = $1 AND o.failure = $2 AND r.done_at IS NOT NULL`, l.ID, schema.FailActiveOrder).Scan(&n)
		return err == nil && n == 1
	})
}

// reload reads the sale's layout again (after the reshard).
func (l *ledgerSale) reload(t *testing.T) {
	t.Helper()
	s, err := l.rs.LoadSale(context.Background(), l.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Shards) != 2 {
		t.Fatalf("%d shards after the reshard, want 2", len(s.Shards))
	}
	l.Sale = s
}

// plantGhost writes what a lost journal entry would leave: a unit taken, a
// buyer record and an order record, no journal entry, no order in
// PostgreSQL, on a shard that has a unit.
func (l *ledgerSale) plantGhost(t *testing.T) sharding.OrderID {
	t.Helper()
	ctx := context.Background()
	c := l.rs.Client()
	rem, err := l.rs.Remaining(ctx, l.Sale, l.item)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range crowd(t, 100) {
		h := sharding.HomeShard(b.user, l.ID, len(l.Shards))
		if rem[h] == 0 {
			continue
		}
		tag, id := l.Shards[h], sharding.NewOrderID(l.ID, rand.Uint64(), rand.Uint32())
		now, u := time.Now(), strconv.FormatUint(b.user, 10)
		for _, cmd := range []rueidis.Completed{
			c.B().Decr().Key(string(sharding.AppendStockKey(nil, tag, l.item))).Build(),
			c.B().Hset().Key(string(sharding.AppendBuyersKey(nil, tag))).FieldValue().FieldValue(u, id.String()).Build(),
			c.B().Hset().Key(string(sharding.AppendOrderKey(nil, tag, id))).FieldValue().FieldValue("user", u).
				FieldValue("item", strconv.FormatInt(l.item, 10)).FieldValue("status", "PENDING").
				FieldValue("created", strconv.FormatInt(now.UnixMilli(), 10)).FieldValue("expires", strconv.FormatInt(now.Add(15*time.Second).UnixMilli(), 10)).Build(),
		} {
			if err := c.Do(ctx, cmd).Error(); err != nil {
				t.Fatal(err)
			}
		}
		return id
	}
	t.Fatal("no shard with a unit for the ghost")
	return sharding.OrderID{}
}

func (l *ledgerSale) count(t *testing.T, status string) int {
	t.Helper()
	var n int
	if err := l.pool.QueryRow(context.Background(), `SELECT count(*) FROM orders WHERE sale_id = $1 AND status = $2`, l.ID, status).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (l *ledgerSale) unsold(t *testing.T) int64 {
	t.Helper()
	rem, err := l.rs.Remaining(context.Background(), l.Sale, l.item)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, r := range rem {
		n += r
	}
	return n
}

func (l *ledgerSale) waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !ok(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 60 s", what)
		}
	}
}

// flashctl runs the tool on the stack and wants exit code want.
func (l *ledgerSale) flashctl(t *testing.T, want int, args ...string) string {
	t.Helper()
	code, out, errOut := runFlashctl(args...)
	if code != want {
		t.Fatalf("flashctl %v: exit %d, want %d\n%s%s", args, code, want, out, errOut)
	}
	return out
}

func runFlashctl(args ...string) (code int, stdout, stderr string) {
	cmd := exec.Command(filepath.Join(binDir, "flashctl"), args...)
	cmd.Env = append(os.Environ(), "FLASHSALE_REDIS="+strings.Join(testenv.RedisAddrs(), ","),
		"KAFKA_BROKERS="+strings.Join(testenv.KafkaBrokers(), ","), "DATABASE_URL="+testenv.DatabaseURL())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	}
	if err != nil {
		return -1, out.String(), err.Error()
	}
	return 0, out.String(), errb.String()
}

// report runs `flashctl sale report` over the two gateways and the test's
// writer group, with extra flags (before the command: --json).
func (l *ledgerSale) report(t *testing.T, extra ...string) (int, string, string) {
	t.Helper()
	var global []string
	if len(extra) > 0 && extra[0] == "--json" {
		global, extra = extra[:1], extra[1:]
	}
	args := append(global, "sale", "report", "--sale", strconv.FormatInt(l.ID, 10), "--gateways", l.a.admin+","+l.b.admin,
		"--writer-group", l.topic+"-writers", "--orders-topic", l.topic)
	return runFlashctl(append(args, extra...)...)
}

// jsonReport takes the report as JSON and returns it with the exit code.
func (l *ledgerSale) jsonReport(t *testing.T) (int, *ledger.SaleReport) {
	t.Helper()
	code, out, errOut := l.report(t, "--json")
	var rep ledger.SaleReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("flashctl sale report --json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	return code, &rep
}

// waitSettled takes the report until it says the sale settled, and wants it
// balanced with exit 0.
func (l *ledgerSale) waitSettled(t *testing.T, within time.Duration) *ledger.SaleReport {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		code, rep := l.jsonReport(t)
		if rep.Settled {
			if code != 0 || !rep.Balanced {
				t.Fatalf("settled sale: exit %d, balanced %v, discrepancies %+v", code, rep.Balanced, rep.Ledger.Discrepancies)
			}
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled within %v: %+v (lag %+v)", within, rep.Ledger.Total, rep.Lag)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
