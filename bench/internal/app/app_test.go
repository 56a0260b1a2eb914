package app

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwt"

	"flashsale/bench/internal/report"
	"flashsale/sharding"
)

// fakeGateway sells units of item 7 to the first users that ask, refuses one
// request in five with 429, and accepts pays and cancels.
type fakeGateway struct {
	mu      sync.Mutex
	units   int
	total   int               // the sale's quantity (0: 10)
	delay   time.Duration     // each purchase takes this long
	holders map[string]string // authorization -> order id
	n       atomic.Int64
	pays    atomic.Int64
	cancels atomic.Int64
}

func (g *fakeGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == "GET" && r.URL.Path == "/api/flash-sales/sales/42":
		fmt.Fprintf(w, `{"id":42,"items":[{"id":7,"quantity":%d}]}`, cmp.Or(g.total, 10))
	case r.URL.Path == "/metrics":
		g.mu.Lock()
		left := g.units
		g.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE flashsale_stock_left gauge\nflashsale_stock_left{item=\"7\",shard=\"0\"} %d\nflashsale_stock_left{item=\"7\",shard=\"1\"} 0\n", left)
	case strings.HasSuffix(r.URL.Path, "/pay"):
		g.pays.Add(1)
		w.WriteHeader(202)
	case strings.HasSuffix(r.URL.Path, "/cancel"):
		g.cancels.Add(1)
		w.WriteHeader(202)
	case r.URL.Path == "/api/flash-sales/items/7/purchase":
		time.Sleep(g.delay)
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ey") {
			w.WriteHeader(401)
			fmt.Fprint(w, `{"error":"UNAUTHORIZED"}`)
			return
		}
		if g.n.Add(1)%5 == 0 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(429)
			fmt.Fprint(w, `{"error":"RATE_LIMITED"}`)
			return
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		auth := r.Header.Get("Authorization")
		if id, ok := g.holders[auth]; ok {
			w.WriteHeader(409)
			fmt.Fprintf(w, `{"error":"ALREADY_PURCHASED","orderId":%q}`, id)
			return
		}
		if g.units == 0 {
			w.WriteHeader(410)
			fmt.Fprint(w, `{"error":"SOLD_OUT"}`)
			return
		}
		g.units--
		id := sharding.NewOrderID(42, uint64(g.units), uint32(len(g.holders))).String()
		g.holders[auth] = id
		w.WriteHeader(202)
		fmt.Fprintf(w, `{"orderId":%q,"status":"PENDING"}`, id)
	default:
		w.WriteHeader(404)
		fmt.Fprint(w, `{"error":"ITEM_NOT_FOUND"}`)
	}
}

func TestFlashCrowdAgainstFakeGateway(t *testing.T) {
	g := &fakeGateway{units: 10, holders: map[string]string{}}
	srv := httptest.NewServer(g)
	defer srv.Close()
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"-url", srv.URL, "-sale", "42", "-scenario", "flash-crowd", "-users", "300",
		"-ramp", "300ms", "-think", "50ms", "-backoff", "10ms", "-retry-fraction", "1", "-c", "16", "-out", dir, "-quiet", "-seed", "1"},
		func(k string) string { return map[string]string{"FLASHSALE_JWT_SECRET": "s"}[k] }, &stdout, &stderr)
	t.Log(stdout.String(), stderr.String())
	if code != ExitOK {
		t.Fatalf("exit code %d", code)
	}
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res report.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Winners != 10 {
		t.Errorf("winners = %d, want 10", res.Winners)
	}
	if res.Retries == 0 {
		t.Error("no retries after 429s")
	}
	if got := g.pays.Load() + g.cancels.Load(); got == 0 || got > 10 {
		t.Errorf("pays+cancels = %d, want 1..10 (60%%+10%% of 10 winners)", got)
	}
	count := func(kind, what string) int64 {
		for _, c := range append(res.Status, res.Codes...) {
			if c.Kind == kind && c.What == what {
				return c.Count
			}
		}
		return 0
	}
	if count("purchase", "SOLD_OUT") == 0 || count("purchase", "429") == 0 || count("purchase", "202") < 10 {
		t.Errorf("status mix = %+v %+v", res.Status, res.Codes)
	}
	if count("purchase", "401") != 0 {
		t.Error("tokens were refused")
	}
	if html, err := os.ReadFile(filepath.Join(dir, "report.html")); err != nil || !bytes.Contains(html, []byte("<svg")) {
		t.Errorf("report.html: %v", err)
	}
	if !strings.Contains(stdout.String(), "report: "+filepath.Join(dir, "report.html")) {
		t.Error("report path not printed")
	}
}

func TestBadFlagsExitWithUsageCode(t *testing.T) {
	var stderr bytes.Buffer
	code := Main(context.Background(), []string{"-scenario", "nope", "-dev", "-items", "1"}, func(string) string { return "" }, &bytes.Buffer{}, &stderr)
	if code != ExitUsage || !strings.Contains(stderr.String(), `bench: -scenario "nope"`) {
		t.Fatalf("code %d, stderr %q", code, stderr.String())
	}
}

func TestUnreachableTargetFails(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	var stderr bytes.Buffer
	code := Main(context.Background(), []string{"-url", url, "-dev", "-items", "1", "-n", "5", "-quiet", "-out", t.TempDir()},
		func(string) string { return "" }, &bytes.Buffer{}, &stderr)
	if code != ExitError || !strings.Contains(stderr.String(), "no response from") {
		t.Fatalf("code %d, stderr %q", code, stderr.String())
	}
}

func TestTokensOutWritesOneTokenPerUser(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens.txt")
	var stderr bytes.Buffer
	code := Main(context.Background(), []string{"-tokens-out", file, "-users", "5", "-jwt-secret", "0123456789abcdef0123"},
		func(string) string { return "" }, &bytes.Buffer{}, &stderr)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want 5", len(lines))
	}
	for i, l := range lines {
		if strings.Count(l, ".") != 2 {
			t.Fatalf("line %d is not a JWT: %q", i, l)
		}
	}
}

// -tokens-out signs with -jwt-key when given, as the run does.
func TestTokensOutWithKeyFile(t *testing.T) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyFile, file := filepath.Join(dir, "key.pem"), filepath.Join(dir, "tokens.txt")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	code := Main(context.Background(), []string{"-tokens-out", file, "-users", "3", "-jwt-key", keyFile},
		func(string) string { return "" }, &bytes.Buffer{}, &stderr)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3", len(lines))
	}
	if _, err := jwt.Parse([]byte(lines[2]), jwt.WithKey(jwa.ES256, &k.PublicKey)); err != nil {
		t.Fatalf("token not signed by the key: %v", err)
	}
}

// An https target with a self-signed certificate is measured with
// -insecure (the portable engine), and the report names the engine.
func TestHTTPSTargetWithInsecure(t *testing.T) {
	g := &fakeGateway{units: 5, holders: map[string]string{}}
	srv := httptest.NewTLSServer(g)
	defer srv.Close()
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"-url", srv.URL, "-items", "7", "-n", "300", "-c", "4", "-insecure", "-quiet", "-out", dir, "-dev"},
		os.Getenv, &stdout, &stderr)
	if code != ExitOK {
		t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res report.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Meta.Engine != "portable" || res.Responses != 300 || res.Failed != 0 {
		t.Fatalf("engine %q, %d responses, %d failures", res.Meta.Engine, res.Responses, res.Failed)
	}
}
