package app

import (
	"bytes"
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"
)

// reportChecks is what the page must show, read in the browser.
const reportChecks = `(() => {
  const q = s => document.querySelector(s);
  const box = s => { const e = q(s); if (!e) return 0; const r = e.getBoundingClientRect(); return Math.round(r.width * r.height); };
  return {
    outcomes: [...document.querySelectorAll('#outcomes tbody tr')].map(r => r.dataset.outcome),
    warning: (q('#warnings') || {}).innerText || '',
    sellout: (q('#card-sellout b') || {}).innerText || '',
    hdrLines: document.querySelectorAll('#hdr polyline.series').length,
    selloutLines: document.querySelectorAll('#sellout polyline.series').length,
    mixLines: document.querySelectorAll('#mixtime polyline.series').length,
    hdrArea: box('#hdr svg[role=img]'),
    meta: (q('#meta') || {}).innerText || '',
    status: (q('#status-mix') || {}).innerText || '',
    overflow: document.documentElement.scrollWidth - window.innerWidth,
  };
})()`

// A real run (the engine against a fake gateway that sells 200 units slowly
// over two connections, so the crowd outpaces it and the sends wait for a
// connection: the report says so, not that the generator fell behind)
// renders a report that Chromium shows with its key elements, on a desktop
// and a phone.
// Screenshots: $FLASHSALE_ARTIFACTS/TestReportInChromium or
// bench/internal/app/testdata/out/TestReportInChromium.
func TestReportInChromium(t *testing.T) {
	chrome := chromium(t)
	g := &fakeGateway{units: 200, total: 200, holders: map[string]string{}, delay: 500 * time.Microsecond}
	srv := httptest.NewServer(g)
	defer srv.Close()
	dir := artifacts(t)
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"-url", srv.URL, "-sale", "42", "-scenario", "flash-crowd", "-users", "1500",
		"-ramp", "300ms", "-think", "50ms", "-backoff", "10ms", "-c", "2", "-metrics-url", srv.URL + "/metrics",
		"-out", dir, "-quiet", "-seed", "7"},
		func(k string) string { return map[string]string{"FLASHSALE_JWT_SECRET": "s"}[k] }, &stdout, &stderr)
	t.Log(stdout.String(), stderr.String())
	if code != ExitOK {
		t.Fatalf("exit code %d", code)
	}
	for _, v := range look(t, chrome, filepath.Join(dir, "report.html"), "#outcomes", reportChecks, dir, "report", 1200, 390) {
		c := v.Checks
		t.Logf("width %d: %v", v.Width, c)
		outs, _ := c["outcomes"].([]any)
		has := map[any]bool{}
		for _, o := range outs {
			has[o] = true
		}
		for _, want := range []string{"202", "409", "410", "429", "pay", "all"} {
			if !has[want] {
				t.Errorf("width %d: no latency row for %s (rows %v)", v.Width, want, outs)
			}
		}
		if w, _ := c["warning"].(string); !bytes.Contains([]byte(w), []byte("did not keep up")) || !bytes.Contains([]byte(w), []byte("waited for one of the 2 connections")) {
			t.Errorf("width %d: no late-send warning: %q", v.Width, w)
		}
		if s, _ := c["sellout"].(string); s == "" || s == "not sold out" || s == "–" {
			t.Errorf("width %d: time to sell out card says %q", v.Width, s)
		}
		if n, _ := c["hdrLines"].(float64); n < 4 {
			t.Errorf("width %d: percentile plot has %v lines", v.Width, n)
		}
		if n, _ := c["selloutLines"].(float64); n < 2 {
			t.Errorf("width %d: sell-out chart has %v lines, want the 202s and the stock metric", v.Width, n)
		}
		if n, _ := c["mixLines"].(float64); n < 3 {
			t.Errorf("width %d: status mix over time has %v lines", v.Width, n)
		}
		if a, _ := c["hdrArea"].(float64); a < 100*50 {
			t.Errorf("width %d: percentile plot is %v px²", v.Width, a)
		}
		if m, _ := c["meta"].(string); !bytes.Contains([]byte(m), []byte("-seed 7")) || !bytes.Contains([]byte(m), []byte("seed\n7")) && !bytes.Contains([]byte(m), []byte("seed\t7")) {
			t.Errorf("width %d: run metadata lacks the seed and flags: %q", v.Width, m)
		}
		if s, _ := c["status"].(string); !bytes.Contains([]byte(s), []byte("SOLD_OUT")) {
			t.Errorf("width %d: status mix lacks the codes: %q", v.Width, s)
		}
		if o, _ := c["overflow"].(float64); o > 1 {
			t.Errorf("width %d: the page is %v px wider than the screen", v.Width, o)
		}
	}
}
