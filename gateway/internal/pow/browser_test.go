package pow

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// workerPath is the sale page's worker (package page), the one buyers run.
const workerPath = "../page/assets/pow-worker.js"

const solvePage = `<!doctype html><title>pow</title><script>
window.solve = (challenge, difficulty) => new Promise((ok, fail) => {
  const w = new Worker('/pow-worker.js');
  w.onmessage = (ev) => { if (ev.data.progress) return; w.terminate(); ok(ev.data); };
  w.onerror = (ev) => { w.terminate(); fail(ev.message); };
  w.postMessage({challenge, difficulty});
});
</script>`

// browser starts a headless Chromium on a page that can run the worker, or
// skips (fails with FLASHSALE_REQUIRE_STACK=1) when there is none.
func browser(t testing.TB) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test: needs chromium")
	}
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("FLASHSALE_REQUIRE_STACK") == "1" {
			t.Fatal("chromium is not installed (make up installs it)")
		}
		t.Skip("chromium is not installed")
	}
	worker, err := os.ReadFile(workerPath)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/pow-worker.js" {
			w.Header().Set("Content-Type", "text/javascript")
			_, _ = w.Write(worker)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(solvePage))
	}))
	t.Cleanup(srv.Close)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA() })
	// The first call starts the browser, which lives as long as its context:
	// no timeout on it (the test's own timeout bounds it).
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return ctx
}

type solved struct {
	Nonce  string  `json:"nonce"`
	Hashes float64 `json:"hashes"`
	Ms     float64 `json:"ms"`
}

func browserSolve(ctx context.Context, challenge []byte, d int) (solved, error) {
	js := fmt.Sprintf("solve(%q, %d)", challenge, d)
	return chromedp.Run(ctx, chromedp.Evaluate[solved](js, chromedp.EvalAwaitPromise))
}

// TestBrowserProofVerifies: the proof a real Chromium's worker finds passes
// the gateway's check, and it is the smallest nonce (the Go solver's).
func TestBrowserProofVerifies(t *testing.T) {
	ctx := browser(t)
	is := issuer(t, "pow-secret-0123456789", "")
	now := time.Now()
	for _, d := range []int{4, 10, 14} {
		c := is.AppendChallenge(nil, now, 7, 42, d)
		run, cancel := context.WithTimeout(ctx, 20*time.Second)
		got, err := browserSolve(run, c, d)
		cancel()
		if err != nil {
			t.Fatalf("d=%d: %v", d, err)
		}
		if _, res := is.Verify(now, []byte(string(c)+":"+got.Nonce), 7, 42); res != OK {
			t.Fatalf("d=%d: the browser's proof %s: %v", d, got.Nonce, res)
		}
		if want, _ := Solve(c, d); strconv.FormatUint(want, 10) != got.Nonce {
			t.Fatalf("d=%d: browser found %s, the smallest is %d", d, got.Nonce, want)
		}
		t.Logf("d=%d: %.0f hashes in %.1f ms (%.2f MH/s)", d, got.Hashes, got.Ms, got.Hashes/got.Ms/1e3)
	}
}

// BenchmarkBrowserSolve measures the worker in headless Chromium: one op is
// one fresh challenge; ms/solve is the browser's own clock, MH/s its rate.
//
//	go test -run '^$' -bench BrowserSolve -benchtime 10x ./gateway/internal/pow
func BenchmarkBrowserSolve(b *testing.B) {
	ctx := browser(b)
	is := issuer(b, "pow-secret-0123456789", "")
	for _, d := range []int{12, 16, 18, 20} {
		b.Run("d="+strconv.Itoa(d), func(b *testing.B) {
			var hashes, ms float64
			for i := 0; i < b.N; i++ {
				c := is.AppendChallenge(nil, time.Now(), 7, uint64(i), d)
				got, err := browserSolve(ctx, c, d)
				if err != nil {
					b.Fatal(err)
				}
				hashes += got.Hashes
				ms += got.Ms
			}
			b.ReportMetric(ms/float64(b.N), "ms/solve")
			b.ReportMetric(hashes/float64(b.N), "hashes/op")
			b.ReportMetric(hashes/ms/1e3, "MH/s")
		})
	}
}
