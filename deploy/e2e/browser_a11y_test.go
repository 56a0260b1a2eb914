package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// TestBrowserKeyboardAndReaders: a buyer with a keyboard only, on a phone,
// in light and in dark colours, signs in, buys and pays without a pointer;
// focus goes where the next step is. In each state the page is checked as
// a screen reader and a low-vision reader get it (auditPage): the live
// status line and the alert in the accessibility tree with the text the
// page shows, every control named, "buy" exposed as disabled when off,
// text contrast at WCAG AA, touch targets of 44 px, nothing scrolling
// sideways; and by axe. The dark scheme shows the shop's accent lightened
// until it reads. In every language.
func TestBrowserKeyboardAndReaders(t *testing.T) {
	need(t)
	b := browser(t)
	inLanguages(t, func(t *testing.T, lang string) {
		s, g := startFrontDoor(t, 2, 0, branded(map[string]any{"name": "Keyboard only"}))
		url := fmt.Sprintf("http://%s/sale/%d", g.addr, s.ID)
		for i, scheme := range []string{"light", "dark"} {
			keyboardOnly(t, b, lang, scheme, url, fmt.Sprint(1401+i))
		}
	})
}

func keyboardOnly(t *testing.T, b context.Context, lang, scheme, url, user string) {
	tb := newTab(t, b, lang, "a11y-phone-"+scheme, 390, 844, true)
	if _, err := chromedp.Call(tb.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
		t.Fatal(err)
	}
	tb.do(chromedp.Navigate(url))
	tb.waitState(10*time.Second, nil, "signin")
	tb.audit("signin")
	tb.axeAudit("signin")
	tb.tabTo("skip") // the first stop: the skip link, shown while focused
	tb.audit("skip-link")
	tb.tabTo("user-id")
	tb.do(chromedp.KeyEvent(user), chromedp.KeyEvent("\r"))
	tb.waitState(10*time.Second, nil, "open")
	if f := tb.focused(); f != "buy" {
		t.Errorf("%s: after the sign-in the focus is on %q, want the buy button", tb.name, f)
	}
	tb.audit("open")
	tb.axeAudit("open")
	tb.do(chromedp.KeyEvent("\r"))
	tb.waitState(20*time.Second, nil, "reserved")
	if f := tb.focused(); f != "order-h" {
		t.Errorf("%s: with the order reserved the focus is on %q, want the order's heading", tb.name, f)
	}
	tb.audit("reserved")
	tb.shot("reserved")
	tb.tabTo("pay")
	tb.do(chromedp.KeyEvent("\r"))
	tb.waitState(20*time.Second, nil, "paid")
	tb.audit("paid")
	tb.shot("paid")
	logShots(t, tb)
}

// focused is the id of the element with the focus ("" for none or no id).
func (tb *tab) focused() string {
	return eval[string](tb, `document.activeElement ? document.activeElement.id : ''`)
}

// tabTo presses Tab until the element with id has the focus (at most 20).
func (tb *tab) tabTo(id string) {
	tb.t.Helper()
	var seen []string
	for range 20 {
		tb.do(chromedp.KeyEvent("\t"))
		f := tb.focused()
		if f == id {
			return
		}
		seen = append(seen, f)
	}
	tb.t.Fatalf("%s: Tab never reaches #%s (went through %q)", tb.name, id, seen)
}

// pageProblems is run in the page: what a reader of the visible page would
// trip on. Contrast is computed from the computed colours against the first
// opaque background up the tree; an aria-disabled control (inactive, WCAG's
// exception) and visually hidden text are left out.
const pageProblems = `(() => {
  const out = [];
  const hiddenish = (e) => !!e.closest('[hidden], .visually-hidden') || getComputedStyle(e).visibility === 'hidden';
  // (Off screen is not shown: the skip link, until it has the focus.)
  const shown = (e) => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0 && r.right > 0 && r.bottom > 0 && !hiddenish(e); };
  if (!document.documentElement.lang) out.push('no lang on <html>');
  if (!document.title.trim()) out.push('no title');
  if (document.documentElement.scrollWidth > innerWidth + 1) out.push('scrolls sideways: ' + document.documentElement.scrollWidth + ' > ' + innerWidth);
  const ids = new Set();
  document.querySelectorAll('[id]').forEach((e) => { if (ids.has(e.id)) out.push('duplicate id ' + e.id); ids.add(e.id); });
  for (const e of document.querySelectorAll('button, input, a[href], select, textarea')) {
    if (!shown(e)) continue;
    const label = e.labels ? [...e.labels].map((l) => l.textContent).join(' ') : '';
    const name = (e.getAttribute('aria-label') || label || e.textContent || '').trim();
    if (!name) out.push('control without a name: ' + (e.id || e.outerHTML.slice(0, 60)));
    const r = e.getBoundingClientRect();
    if (e.type !== 'radio' && (r.height < 44 || r.width < 44)) out.push('small target ' + (e.id || name) + ': ' + Math.round(r.width) + 'x' + Math.round(r.height));
  }
  const rgba = (c) => { const m = /rgba?\(([^)]+)\)/.exec(c); if (!m) return null; const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }; return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const background = (e) => {
    for (let n = e; n; n = n.parentElement) { const c = rgba(getComputedStyle(n).backgroundColor); if (c && c[3] >= 0.99) return c; }
    return rgba(getComputedStyle(document.documentElement).backgroundColor) || [255, 255, 255, 1];
  };
  for (const e of document.querySelectorAll('body *')) {
    const text = [...e.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join('').trim();
    if (!text || !shown(e) || e.closest('[aria-disabled="true"]')) continue;
    const s = getComputedStyle(e), fg = rgba(s.color), bg = background(e);
    if (!fg) { out.push('colour not read: ' + s.color); continue; }
    const mix = fg.slice(0, 3).map((v, i) => v * fg[3] + bg[i] * (1 - fg[3]));
    const a = lum(mix), b = lum(bg), ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const size = parseFloat(s.fontSize), large = size >= 24 || (size >= 18.66 && parseInt(s.fontWeight, 10) >= 700);
    if (ratio < (large ? 3 : 4.5)) out.push('contrast ' + ratio.toFixed(2) + ' for "' + text.slice(0, 40) + '"');
  }
  return out;
})()`

// audit fails the test with every problem of the page in state (pageProblems
// and the accessibility tree's).
func (tb *tab) audit(state string) {
	tb.t.Helper()
	problems := eval[[]string](tb, pageProblems)
	problems = append(problems, tb.treeProblems()...)
	if len(problems) > 0 {
		tb.picture("audit-" + state)
		tb.t.Errorf("%s, %s: %d accessibility problems:\n  %s", tb.name, state, len(problems), strings.Join(problems, "\n  "))
	}
}

// treeProblems reads Chromium's accessibility tree, what a screen reader is
// given: the status line is a live "status" holding the text the page shows,
// the alert an "alert", "buy" a named button marked disabled exactly when
// the page has it off, no unnamed button, and nothing busy after loading.
func (tb *tab) treeProblems() []string {
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	tree, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		return []string{"reading the accessibility tree: " + err.Error()}
	}
	byID := map[accessibility.NodeID]*accessibility.Node{}
	for _, n := range tree.Nodes {
		byID[n.NodeID] = n
	}
	var text func(n *accessibility.Node) string
	text = func(n *accessibility.Node) string {
		var b strings.Builder
		if n.Role != nil && axString(n.Role) == "StaticText" {
			b.WriteString(axString(n.Name))
		}
		for _, c := range n.ChildIDs {
			if cn := byID[c]; cn != nil {
				b.WriteString(text(cn))
			}
		}
		return b.String()
	}
	var out []string
	roles := map[string]*accessibility.Node{}
	for _, n := range tree.Nodes {
		if n.Ignored || n.Role == nil {
			continue
		}
		role, name := axString(n.Role), axString(n.Name)
		if roles[role] == nil {
			roles[role] = n
		}
		if role == "button" && strings.TrimSpace(name) == "" {
			out = append(out, "a button without a name")
		}
		if role == "button" && name == tb.text("buy") {
			if off, disabled := buyOff(tb), axBool(n, "disabled"); off != disabled {
				out = append(out, fmt.Sprintf("buy is off on the page: %v, disabled for a reader: %v", off, disabled))
			}
		}
		if axBool(n, "busy") {
			out = append(out, "a "+role+" is busy after loading")
		}
	}
	status := roles["status"]
	if status == nil {
		return append(out, "no status region in the tree")
	}
	if live := axProp(status, "live"); live != "polite" {
		out = append(out, "the status region is live "+live+", want polite")
	}
	if got, want := strings.Join(strings.Fields(text(status)), " "), strings.Join(strings.Fields(tb.text("status")), " "); got != want {
		out = append(out, fmt.Sprintf("the status region reads %q, the page shows %q", got, want))
	}
	if tb.text("alert") != "" && roles["alert"] == nil {
		out = append(out, "an alert shows but no alert is in the tree")
	}
	return out
}

func axString(v *accessibility.Value) string {
	if v == nil {
		return ""
	}
	var x any
	if err := json.Unmarshal(v.Value, &x); err != nil {
		return string(v.Value)
	}
	if str, ok := x.(string); ok {
		return str
	}
	return fmt.Sprint(x)
}

func axProp(n *accessibility.Node, name string) string {
	for _, p := range n.Properties {
		if string(p.Name) == name {
			return axString(p.Value)
		}
	}
	return ""
}

func axBool(n *accessibility.Node, name string) bool { return axProp(n, name) == "true" }
