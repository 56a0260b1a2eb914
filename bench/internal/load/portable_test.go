package load

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func soldOutHandler(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, "/api/flash-sales/items/") || r.Method != "POST" {
		w.WriteHeader(400)
		return
	}
	w.WriteHeader(410)
	_, _ = w.Write([]byte(`{"error":"SOLD_OUT"}`))
}

// The portable engine and the epoll engine give the same counts for the
// same plan, closed and open loop.
func TestPortableEngineMatchesEpoll(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(soldOutHandler))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	plans := map[string]func() *Plan{
		"closed": func() *Plan { return &Plan{Users: 10, Items: 1, Count: 1500} },
		"open": func() *Plan {
			return &Plan{Users: 10, Items: 1, Stages: []Stage{{Rate: 2000, For: 500 * time.Millisecond}}}
		},
	}
	for name, plan := range plans {
		for _, portable := range []bool{false, true} {
			e, err := New(Options{Addr: addr, Conns: 8, Workers: 2, Items: []int64{1}, Portable: portable})
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Run(context.Background(), plan())
			if err != nil {
				t.Fatal(err)
			}
			r := res.Recorder
			want := plan().total()
			if got := r.Status[Purchase][410]; got != want || r.Codes[Purchase][1] != want || r.OutHist[OutGone].TotalCount() != want {
				t.Errorf("%s, %s engine: %d 410s, %d SOLD_OUT, %d in the 410 histogram, want %d (errors %v)", name, res.Engine, got,
					r.Codes[Purchase][1], r.OutHist[OutGone].TotalCount(), want, r.Errs[Purchase])
			}
			if res.Engine != map[bool]string{false: "epoll", true: "portable"}[portable] {
				t.Errorf("engine %q", res.Engine)
			}
		}
	}
}

// Over https the portable engine checks the certificate: a self-signed one
// fails every request, and -insecure (Options.Insecure) lets it through.
func TestPortableEngineSpeaksTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(soldOutHandler))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "https://")
	for _, insecure := range []bool{false, true} {
		e, err := New(Options{Addr: addr, Conns: 4, Workers: 1, Items: []int64{1}, TLS: true, Insecure: insecure, Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Run(context.Background(), &Plan{Users: 3, Items: 1, Count: 200})
		if err != nil {
			t.Fatal(err)
		}
		r := res.Recorder
		if insecure && r.Status[Purchase][410] != 200 {
			t.Errorf("insecure: %d 410s, errors %v", r.Status[Purchase][410], r.Errs[Purchase])
		}
		if !insecure && (r.Errs[Purchase][ErrConnect] != 200 || r.Status[Purchase][410] != 0) {
			t.Errorf("self-signed certificate accepted: 410s %d, errors %v", r.Status[Purchase][410], r.Errs[Purchase])
		}
	}
}
