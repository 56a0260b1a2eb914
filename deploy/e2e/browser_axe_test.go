package e2e_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The axe audit: axe-core (deploy/e2e/testdata/axe-core, vendored from the
// npm registry; see its README) is injected into the page in every state a
// browser test screenshots, and any violation of WCAG 2.1 A or AA it
// reports fails the test.

const (
	axeVersion = "4.14.1"
	axeSHA256  = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c"
)

var axeSource = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "deploy", "e2e", "testdata", "axe-core", "axe.min.js"))
	return string(b), err
})

// TestAxeIsTheVendoredRelease: the vendored file is axe-core's release, as
// its README says.
func TestAxeIsTheVendoredRelease(t *testing.T) {
	src, err := axeSource()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(src))
	if got := hex.EncodeToString(sum[:]); got != axeSHA256 || !strings.HasPrefix(src, "/*! axe v"+axeVersion+"\n") {
		t.Fatalf("testdata/axe-core/axe.min.js: sha256 %s, want axe-core %s's %s", got, axeVersion, axeSHA256)
	}
}

// axeRun runs axe on the page for WCAG 2.1 A and AA and returns each
// violation as "rule (impact): help: node: failure" lines.
const axeRun = `axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']},
  resultTypes: ['violations']}).then((r) => r.violations.flatMap((v) => v.nodes.map((n) =>
  v.id + ' (' + v.impact + '): ' + v.help + ': ' + n.target.join(' ') + ': ' + (n.failureSummary || '').replace(/\s+/g, ' '))))`

// axeViolations injects axe into the tab's page (once per document) and
// returns what it reports.
func (tb *tab) axeViolations() []string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`typeof window.axe === 'object'`))
	if err == nil && !loaded {
		src, rerr := axeSource()
		if rerr != nil {
			tb.t.Fatal(rerr)
		}
		_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](src+";\ntrue"))
	}
	if err != nil {
		tb.t.Fatalf("%s: injecting axe: %v", tb.name, err)
	}
	v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](axeRun, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("%s: running axe: %v", tb.name, err)
	}
	return v
}

// axeAudit fails the test with every violation axe reports in state.
func (tb *tab) axeAudit(state string) {
	tb.t.Helper()
	if v := tb.axeViolations(); len(v) > 0 {
		tb.t.Errorf("%s, %s (%s): axe reports %d WCAG 2.1 A/AA violations:\n  %s", tb.name, state, tb.lang, len(v), strings.Join(v, "\n  "))
	} else {
		tb.audited++
	}
}

// TestBrowserAxeCatchesPlantedDefects: the audit the browser tests run in
// every state fails on the defects a page change could bring: an input
// without a label, text below contrast (on the page's panel), an image
// without alt text; and it passes on the page as shipped, in both
// languages.
func TestBrowserAxeCatchesPlantedDefects(t *testing.T) {
	need(t)
	b := browser(t)
	s, g := startFrontDoor(t, 1, 30*time.Minute, branded(map[string]any{"name": "Planted defects"}))
	for _, lang := range pageLanguages {
		tb := newTab(t, b, lang, "planted-phone", 390, 844, true)
		tb.do(chromedp.Navigate(fmt.Sprintf("http://%s/sale/%d", g.addr, s.ID)))
		tb.waitState(10*time.Second, nil, "signin")
		if v := tb.axeViolations(); len(v) > 0 {
			t.Fatalf("%s: the page as shipped: %d violations:\n  %s", lang, len(v), strings.Join(v, "\n  "))
		}
		for _, c := range []struct{ rule, plant string }{
			{"label", `const i = document.createElement('input'); i.id = 'planted'; document.getElementById('signin').append(i)`},
			{"color-contrast", `const p = document.createElement('p'); p.id = 'planted'; p.textContent = 'Pale text'; p.style.color = '#a0a0a8';
				document.getElementById('countdown').after(p)`},
			{"image-alt", `const i = document.createElement('img'); i.id = 'planted'; i.src = '/sale/media/logo.svg'; i.width = 40; i.height = 40;
				document.getElementById('items').append(i)`},
		} {
			eval[bool](tb, "(() => { "+c.plant+"; return true; })()")
			v := tb.axeViolations()
			eval[bool](tb, `(document.getElementById('planted').remove(), true)`)
			if !slices.ContainsFunc(v, func(l string) bool { return strings.HasPrefix(l, c.rule+" ") && strings.Contains(l, "#planted") }) {
				t.Errorf("%s: a planted %s defect is not reported: %q", lang, c.rule, v)
			} else {
				t.Logf("%s: planted %s caught: %s", lang, c.rule, v[0])
			}
		}
	}
}
