package app

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fakeRun(t *testing.T, dir string, conns string) {
	t.Helper()
	g := &fakeGateway{units: 50, total: 50, holders: map[string]string{}}
	srv := httptest.NewServer(g)
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"-url", srv.URL, "-sale", "42", "-scenario", "flash-crowd", "-users", "400",
		"-ramp", "200ms", "-think", "20ms", "-c", conns, "-out", dir, "-quiet", "-seed", "3"},
		func(k string) string { return map[string]string{"FLASHSALE_JWT_SECRET": "s"}[k] }, &stdout, &stderr)
	if code != ExitOK {
		t.Fatalf("run: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}

// bench compare A B prints both runs side by side with the change, writes
// the comparison page, and Chromium shows its table and plot.
func TestCompareTwoRuns(t *testing.T) {
	dir := artifacts(t)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	fakeRun(t, a, "4")
	fakeRun(t, b, "16")
	var stdout, stderr bytes.Buffer
	if code := Main(context.Background(), []string{"compare", a, b}, os.Getenv, &stdout, &stderr); code != ExitOK {
		t.Fatalf("compare: exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	t.Log(out)
	for _, want := range []string{"throughput (responses/s)", "last 202 (time to sell out)", "202 ", "410 ", "p99.9", "comparison: " + filepath.Join(b, "compare.html")} {
		if !strings.Contains(out, want) {
			t.Errorf("comparison lacks %q", want)
		}
	}
	if code := Main(context.Background(), []string{"compare", a}, os.Getenv, &stdout, &stderr); code != ExitUsage {
		t.Errorf("compare with one run: exit %d", code)
	}
	if code := Main(context.Background(), []string{"compare", a, filepath.Join(dir, "missing")}, os.Getenv, &stdout, &stderr); code != ExitError ||
		!strings.Contains(stderr.String(), "reading result") {
		t.Errorf("compare with a missing run: exit %d, %s", code, stderr.String())
	}
	chrome := chromium(t)
	views := look(t, chrome, filepath.Join(b, "compare.html"), "#compare", `({rows: document.querySelectorAll('#compare tbody tr').length,
		lines: document.querySelectorAll('#hdr-compare polyline.series').length})`, dir, "compare", 1000)
	if c := views[0].Checks; c["rows"].(float64) < 20 || c["lines"].(float64) < 4 {
		t.Errorf("comparison page: %v", c)
	}
}
