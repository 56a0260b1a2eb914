package httpapi

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// syncBuf is a log sink safe for the server's goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestUnparsableRequestsGetJSONAndLeakNothing sends requests fasthttp cannot
// read (they never reach the handler) and checks each answer is the API's
// JSON error with the right status, and that the log holds neither the
// bearer token they carried nor one line per request.
func TestUnparsableRequestsGetJSONAndLeakNothing(t *testing.T) {
	const token = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRva2Vu.c2lnbmF0dXJl"
	var logs syncBuf
	srv := NewServer(func(ctx *fasthttp.RequestCtx) { ctx.SetStatusCode(204) },
		ServerConfig{ReadTimeout: time.Second, WriteTimeout: time.Second, IdleTimeout: time.Second,
			Log: slog.New(slog.NewTextHandler(&logs, nil))})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(GuardHeads(ln)) }()
	defer func() { _ = srv.Shutdown() }()
	auth := "Authorization: Bearer " + token + "\r\n"
	cases := []struct {
		name, raw string
		status    int
		code      string
	}{
		{"bad content-length", "POST /api/flash-sales/items/1/purchase HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: abc\r\n\r\n", 400, "BAD_REQUEST"},
		{"negative content-length", "POST /x HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: -5\r\n\r\n", 400, "BAD_REQUEST"},
		{"body too large", "POST /x HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 1000000\r\n\r\n", 413, "BODY_TOO_LARGE"},
		{"headers too large", "GET /x HTTP/1.1\r\nHost: x\r\n" + auth + "X-Big: " + strings.Repeat("a", 2*ReadBufferSize) + "\r\n\r\n", 431, "HEADERS_TOO_LARGE"},
		{"body never sent", "POST /x HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 100\r\n\r\n", 408, "REQUEST_TIMEOUT"},
		// A held-out attack run: lines ending in a bare LF waited for the
		// read timeout and got 408 (fasthttp waits for a CRLFCRLF that never
		// comes); GuardHeads refuses them at once.
		{"bare LF lines", "POST /api/flash-sales/items/1/purchase HTTP/1.1\nHost: x\n" + auth + "Content-Length: 0\n\n", 400, "BAD_REQUEST"},
		{"bare LF after the request line", "GET /x HTTP/1.1\r\nHost: x\n\r\n", 400, "BAD_REQUEST"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			sent := time.Now()
			if _, err := io.WriteString(conn, c.raw); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			// Only a request that leaves the server waiting may take the
			// read timeout (1 s) to be answered.
			if took := time.Since(sent); c.status != 408 && took > 900*time.Millisecond {
				t.Fatalf("answered %d after %v: the server waited for the read timeout", resp.StatusCode, took)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status || string(body) != `{"error":"`+c.code+`"}` || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("got %d %q %q, want %d {\"error\":%q} as JSON", resp.StatusCode, resp.Header.Get("Content-Type"), body, c.status, c.code)
			}
		})
	}
	time.Sleep(100 * time.Millisecond) // the last connection's log line
	out := logs.String()
	if strings.Contains(out, token) || strings.Contains(out, "c2VjcmV0") {
		t.Fatalf("the log holds the bearer token:\n%s", out)
	}
	if n := strings.Count(out, "\n"); n < 1 || n > 2 {
		t.Fatalf("%d log lines for %d bad requests, want 1 (then one per %v):\n%s", n, len(cases), "10s", out)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		`error when serving connection "a"<->"b": cannot parse: x. Buffer size=8192, contents: "POST / HTTP/1.1\r\nAuthorization: Bearer e"`: `error when serving connection "a"<->"b": cannot parse: x. [request bytes left out]`,
		`error when serving connection "a"<->"b": read timeout`:                                                                              `error when serving connection "a"<->"b": read timeout`,
		`odd: Bearer eyJ`: `odd: [request bytes left out]`,
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}
