// Package e2e runs the real binaries, gateway and writer, as processes on the
// local stack (make up), on their default flags, and checks the invariants of
// the SPEC from outside after starts, crashes and broker outages, with no
// repair run. Only the settings a crowd from one test process needs are
// given: the JWT secret, trusted loopback proxies (each user's address comes
// in X-Forwarded-For, as behind a load balancer) and fresh ports, topic and
// group per test.
package e2e_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/valyala/fasthttp"

	"flashsale/deploy/testenv"
	"flashsale/sharding"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
)

var (
	binDir   string
	buildErr error
	root     string
)

const secret = "e2e-secret-0123456789abcdef"

func TestMain(m *testing.M) {
	_, file, _, _ := runtime.Caller(0)
	root = filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	flag.Parse()
	code := func() int {
		if !testing.Short() {
			dir, err := os.MkdirTemp("", "flashsale-e2e-")
			if err != nil {
				buildErr = err
			} else {
				defer os.RemoveAll(dir)
				binDir = dir
				cmd := exec.Command("go", "build", "-o", dir+"/", "./gateway", "./writer", "./bench", "./sharding/cmd/flashctl")
				cmd.Dir = root
				if out, err := cmd.CombinedOutput(); err != nil {
					buildErr = fmt.Errorf("go build: %v\n%s", err, out)
				}
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

// need skips with -short and fails when the binaries did not build.
func need(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: runs the binaries on the local stack (skipped with -short)")
	}
	testenv.Require(t, "redis", "postgres", "kafka")
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

// proc is one running binary.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
}

func (p *proc) kill(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func (p *proc) stop(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		t.Errorf("%s ignored SIGTERM for 20s", p.name)
	}
}

func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log.Name())
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}

func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	return startAs(t, 0, name, args...)
}

// startAs is start with the process's group id set to gid (0: the test's
// own), by which testenv.Partitions names it.
func startAs(t *testing.T, gid uint32, name string, args ...string) *proc {
	t.Helper()
	dir := os.Getenv("E2E_LOG_DIR") // to keep the logs: E2E_LOG_DIR=/tmp/e2e go test ...
	if dir == "" {
		dir = t.TempDir()
	}
	log, err := os.CreateTemp(dir, strings.ReplaceAll(name, " ", "-")+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	bin := strings.Fields(name)[0]
	cmd := exec.Command(filepath.Join(binDir, bin), args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "FLASHSALE_REDIS="+strings.Join(testenv.RedisAddrs(), ","),
		"KAFKA_BROKERS="+strings.Join(testenv.KafkaBrokers(), ","), "DATABASE_URL="+testenv.DatabaseURL())
	if gid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(os.Getuid()), Gid: gid, NoSetGroups: false}}
	}
	testenv.DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("%s log (last lines):\n%s", name, p.tail())
		}
	})
	return p
}

func freePort(t *testing.T) int {
	t.Helper()
	return testenv.FreePort(t)
}

// gateway is a gateway process and its addresses.
type gateway struct {
	*proc
	addr, admin string
	args        []string
	gid         uint32 // the process's group id (startAs), 0 for the test's
}

// startGateway runs a gateway on the default flags but for the test's
// ports, topic, secret, trusted loopback proxies and, since other tests
// share the Redis, a relay limited to the test's sale.
func startGateway(t *testing.T, topic string, s *createdSale, extra ...string) *gateway {
	t.Helper()
	g := &gateway{addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), admin: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	g.args = append([]string{"-listen", g.addr, "-admin", g.admin, "-topic", topic, "-jwt-secret", secret,
		"-trusted-proxies", "127.0.0.0/8", "-relay-sales", strconv.FormatInt(s.ID, 10)}, extra...)
	g.proc = start(t, "gateway "+g.addr, g.args...)
	return g
}

// restart runs the same gateway again (after a kill).
func (g *gateway) restart(t *testing.T) {
	t.Helper()
	g.proc = startAs(t, g.gid, "gateway "+g.addr+" again", g.args...)
}

// waitReady polls /readyz until 200.
func (g *gateway) waitReady(t *testing.T, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		code, _, err := fasthttp.GetTimeout(nil, "http://"+g.admin+"/readyz", time.Second)
		if err == nil && code == 200 {
			return
		}
		select {
		case <-g.done:
			t.Fatalf("gateway exited before it was ready:\n%s", g.tail())
		default:
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("gateway not ready within %v:\n%s", within, g.tail())
}

// startWriter runs a writer for sale on topic with its own group, and the
// extra flags.
func startWriter(t *testing.T, topic string, saleID int64, extra ...string) *proc {
	t.Helper()
	args := append([]string{"run", "-topic", topic, "-dlq-topic", topic + ".dlq", "-group", topic + "-writers",
		"-sales", strconv.FormatInt(saleID, 10), "-admin", ""}, extra...)
	return start(t, "writer", args...)
}

// createdSale is a sale created through `flashctl sale create`.
type createdSale struct {
	*sale.Sale
	item int64
}

func createSale(t *testing.T, units int64, shards int, startsIn time.Duration) *createdSale {
	t.Helper()
	return createSaleWith(t, units, shards, startsIn, nil)
}

// newSaleID draws a sale id for a test.
func newSaleID() int64 { return rand.Int64N(sharding.MaxSaleID-10_000_000) + 10_000_000 }

// createSaleWith is createSale with more fields of the sale file (they
// replace the defaults); fields["item"], a map, adds to the item's.
func createSaleWith(t *testing.T, units int64, shards int, startsIn time.Duration, fields map[string]any) *createdSale {
	t.Helper()
	id := newSaleID()
	if v, ok := fields["id"].(int64); ok { // chosen beforehand, to start the binaries first
		id = v
	}
	item := id*10 + 1
	now := time.Now()
	body := map[string]any{"id": id, "name": "e2e " + t.Name(), "startsAt": now.Add(startsIn).UTC().Format(time.RFC3339Nano),
		"endsAt": now.Add(time.Hour).UTC().Format(time.RFC3339), "paymentWindow": "10m",
		"items": []map[string]any{{"id": item, "name": "thing", "price": 100, "currency": "JPY", "quantity": units}}}
	for k, v := range fields {
		body[k] = v
	}
	if extra, ok := fields["item"].(map[string]any); ok {
		delete(body, "item")
		for k, v := range extra {
			body["items"].([]map[string]any)[0][k] = v
		}
	}
	addrs := testenv.RedisAddrs()
	if v, ok := fields["redis"].([]string); ok { // another cluster's (the lab's), not the file's
		delete(body, "redis")
		addrs = v
	}
	b, _ := json.Marshal(body)
	file := filepath.Join(t.TempDir(), "sale.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(binDir, "flashctl"), "--database-url", testenv.DatabaseURL(), "--redis", strings.Join(addrs, ","),
		"sale", "create", "--file", file, "--shards", strconv.Itoa(shards)).CombinedOutput()
	if err != nil {
		t.Fatalf("flashctl sale create: %v\n%s", err, out)
	}
	rc, err := testenv.NewRedisClientOn(addrs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	rs := stock.New(rc)
	sl, err := rs.LoadSale(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return &createdSale{Sale: sl, item: item}
}

// buyer is one user of a crowd.
type buyer struct {
	user  uint64
	token string
	ip    string
}

func crowd(t *testing.T, n int) []buyer {
	t.Helper()
	base := rand.Uint64N(1<<40) + 1
	out := make([]buyer, n)
	for i := range out {
		tok := mint(base+uint64(i), time.Now().Add(time.Hour))
		out[i] = buyer{user: base + uint64(i), token: tok, ip: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)}
	}
	return out
}

// answer is one purchase's outcome: status (0 when no answer came: a
// connection error) and order id.
type answer struct {
	status  int
	order   string
	body    string    // kept for an answer of 500 and over, for the failure message
	dropped bool      // a hedged attempt's reply the client dropped (chaos)
	sent    time.Time // when the request went (the lab's availability per fault)
}

var client = &fasthttp.Client{MaxConnsPerHost: 512, MaxConnWaitTimeout: 30 * time.Second,
	ReadTimeout: 20 * time.Second, WriteTimeout: 20 * time.Second, MaxIdemponentCallAttempts: 1}

func purchase(addr string, s *createdSale, b buyer) answer { return keyedPurchase(addr, s, b, "") }

// keyedPurchase is purchase with an Idempotency-Key (none when key is "").
func keyedPurchase(addr string, s *createdSale, b buyer, key string) answer {
	return itemPurchase(addr, s.item, b, key)
}

// itemPurchase is keyedPurchase of item.
func itemPurchase(addr string, item int64, b buyer, key string) answer {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod("POST")
	req.SetRequestURI(fmt.Sprintf("http://%s/api/flash-sales/items/%d/purchase", addr, item))
	sent := time.Now()
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("X-Forwarded-For", b.ip)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if err := client.DoTimeout(req, resp, 20*time.Second); err != nil {
		return answer{sent: sent}
	}
	a := answer{status: resp.StatusCode(), sent: sent}
	if a.status >= 500 {
		a.body = string(resp.Body())
	}
	var v struct{ OrderID string }
	if json.Unmarshal(resp.Body(), &v) == nil {
		a.order = v.OrderID
	}
	return a
}

// buyAll sends one purchase per buyer, workers at a time, to addr(i), and
// returns the answers by buyer index.
func buyAll(s *createdSale, buyers []buyer, workers int, addr func(i int) string) []answer {
	out := make([]answer, len(buyers))
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				next.Lock()
				k := i
				i++
				next.Unlock()
				if k >= len(buyers) {
					return
				}
				out[k] = purchase(addr(k), s, buyers[k])
			}
		})
	}
	wg.Wait()
	return out
}

// waves is a crowd sent in the background in waves of 100 buyers every
// 100 ms (1,000 a second), every other buyer to each of two gateways. Read
// answers and sent after done is closed, or through snapshot before.
type waves struct {
	mu      sync.Mutex
	answers []answer    // by buyer
	sent    []time.Time // when each buyer's wave left
	done    chan struct{}
}

func sendWaves(s *createdSale, buyers []buyer, a, b *gateway) *waves {
	w := &waves{answers: make([]answer, len(buyers)), sent: make([]time.Time, len(buyers)), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		start := time.Now()
		for lo := 0; lo < len(buyers); lo += 100 {
			hi := min(lo+100, len(buyers))
			sent := time.Now()
			part := buyAll(s, buyers[lo:hi], 50, func(i int) string {
				if (lo+i)%2 == 0 {
					return a.addr
				}
				return b.addr
			})
			w.mu.Lock()
			copy(w.answers[lo:], part)
			for i := lo; i < hi; i++ {
				w.sent[i] = sent
			}
			w.mu.Unlock()
			time.Sleep(time.Until(start.Add(time.Duration(lo/100+1) * 100 * time.Millisecond)))
		}
	}()
	return w
}

// snapshot returns a copy of the answers of buyers lo to hi so far (status
// 0 for those still waiting).
func (w *waves) snapshot(lo, hi int) []answer {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]answer(nil), w.answers[lo:hi]...)
}

func tally(as []answer) map[int]int {
	m := map[int]int{}
	for _, a := range as {
		m[a.status]++
	}
	return m
}

// audit is what PostgreSQL and Redis hold for a sale.
type audit struct {
	active  map[string]uint64 // PENDING or PAID order id -> user
	all     map[string]string // order id -> status
	users   map[string]uint64 // order id -> user, every status
	redis   int64             // units left over all shards and items
	buyers  map[string]uint64 // Redis buyer records: order id -> user
	journal int64             // entries in the hand-off journals
}

func readAudit(t *testing.T, s *createdSale, pool *pgxpool.Pool, rs *stock.Store) audit {
	t.Helper()
	ctx := context.Background()
	a := audit{active: map[string]uint64{}, all: map[string]string{}, users: map[string]uint64{}, buyers: map[string]uint64{}}
	rows, err := pool.Query(ctx, `SELECT id::text, user_id, status FROM orders WHERE sale_id = $1`, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, st string
		var user int64
		if err := rows.Scan(&id, &user, &st); err != nil {
			t.Fatal(err)
		}
		a.all[id] = st
		a.users[id] = uint64(user)
		if st == "PENDING" || st == "PAID" {
			a.active[id] = uint64(user)
		}
	}
	for _, it := range s.Sale.Items {
		rem, err := rs.Remaining(ctx, s.Sale, it.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rem {
			a.redis += r
		}
	}
	c := rs.Client()
	for _, tag := range s.Shards {
		m, err := c.Do(ctx, c.B().Hgetall().Key(string(sharding.AppendBuyersKey(nil, tag))).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		for u, o := range m {
			user, _ := strconv.ParseUint(u, 10, 64)
			o, _, _ = strings.Cut(o, "|") // the order the buyer record names (lua/order.lua)
			a.buyers[o] = user
		}
		n, err := c.Do(ctx, c.B().Xlen().Key(string(sharding.AppendEventsKey(nil, tag))).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		a.journal += n
	}
	return a
}

// settled waits until the journal is empty and every buyer record in Redis
// has its order in PostgreSQL, then returns the audit.
func settled(t *testing.T, s *createdSale, within time.Duration) audit {
	t.Helper()
	deadline := time.Now().Add(within)
	pool, rs := testenv.NewPool(t), stock.New(testenv.NewRedis(t)) // once: each holds connections until the test ends
	for {
		a := readAudit(t, s, pool, rs)
		missing := 0
		for o := range a.buyers {
			if _, ok := a.active[o]; !ok {
				missing++
			}
		}
		if a.journal == 0 && missing == 0 {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled after %v: %d journal entries, %d buyer records without an active order in PostgreSQL",
				within, a.journal, missing)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkInvariants asserts the SPEC's invariants for a sale of q units whose
// buyers got answers: P <= Q, Q = S + P, every 202 in PostgreSQL, no order
// for a 503, no user with two active orders.
func checkInvariants(t *testing.T, s *createdSale, q int64, a audit, buyers []buyer, answers []answer) {
	t.Helper()
	p := int64(len(a.active))
	if p > q || a.redis+p != q {
		t.Errorf("Q = %d, S = %d, P = %d: want P <= Q and Q = S + P", q, a.redis, p)
	}
	users := map[uint64]int{}
	for _, u := range a.active {
		users[u]++
	}
	for u, n := range users {
		if n > 1 {
			t.Errorf("user %d holds %d active orders", u, n)
		}
	}
	byUser := map[uint64]bool{}
	for _, u := range a.active {
		byUser[u] = true
	}
	for i, ans := range answers {
		switch ans.status {
		case 202:
			if _, ok := a.active[ans.order]; !ok {
				t.Errorf("user %d was told 202 for %s; PostgreSQL has it as %q", buyers[i].user, ans.order, a.all[ans.order])
			}
		case 503:
			if byUser[buyers[i].user] {
				t.Errorf("user %d was told 503 and holds an order", buyers[i].user)
			}
		}
	}
}

// mint signs an HS256 token for user, as a shop's identity provider would.
func mint(user uint64, exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	head := enc([]byte(`{"alg":"HS256","typ":"JWT"}`))
	claims := enc([]byte(fmt.Sprintf(`{"sub":"%d","exp":%d}`, user, exp.Unix())))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(head + "." + claims))
	return head + "." + claims + "." + enc(mac.Sum(nil))
}

func randHex() string { return strconv.FormatUint(rand.Uint64(), 16) }
