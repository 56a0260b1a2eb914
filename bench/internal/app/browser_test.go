package app

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium returns the path of the Chromium binary. Without one the test is
// skipped, unless FLASHSALE_REQUIRE_STACK=1 (CI), where it fails: the stack
// script installs chromium.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("FLASHSALE_REQUIRE_STACK") == "1" {
		t.Fatal("no chromium on PATH (deploy/stack/stack.sh up installs it)")
	}
	t.Skip("no chromium on PATH")
	return ""
}

// artifacts is where a test leaves what people look at (screenshots, the
// report): $FLASHSALE_ARTIFACTS/<test> when set, else testdata/out/<test>
// beside the test (git-ignored). It is emptied first.
func artifacts(t *testing.T) string {
	t.Helper()
	base := os.Getenv("FLASHSALE_ARTIFACTS")
	if base == "" {
		base = filepath.Join("testdata", "out")
	}
	dir, err := filepath.Abs(filepath.Join(base, t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// view is one look at a page: its width, and what checks returned.
type view struct {
	Width  int
	Shot   string // screenshot file
	Checks map[string]any
}

// look opens file in headless Chromium at each width, waits for sel, runs
// the script (a JS expression giving an object) and saves a full-page
// screenshot into dir as <name>-<width>.png.
func look(t *testing.T, chrome, file, sel, script, dir, name string, widths ...int) []view {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	var out []view
	for _, w := range widths {
		err := chromedp.Do(bctx, chromedp.EmulateViewport(int64(w), 900), chromedp.Navigate("file://"+file), chromedp.WaitVisible(sel))
		if err != nil {
			t.Fatalf("chromium at width %d: %v", w, err)
		}
		raw, err := chromedp.Run(bctx, chromedp.Evaluate[json.RawMessage](script))
		if err != nil {
			t.Fatalf("chromium at width %d: checks: %v", w, err)
		}
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("chromium at width %d: screenshot: %v", w, err)
		}
		v := view{Width: w, Shot: filepath.Join(dir, name+"-"+strconv.Itoa(w)+".png")}
		if err := json.Unmarshal(raw, &v.Checks); err != nil {
			t.Fatalf("checks: %v (%s)", err, raw)
		}
		if err := os.WriteFile(v.Shot, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %s (%d bytes)", v.Shot, len(png))
		out = append(out, v)
	}
	return out
}
