package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"flashsale/deploy/testenv"
)

// TestBrowserQueuedUserIsAdmitted: a buyer of a sale with a waiting room and
// proof of work clicks "buy" at the start: the page solves the challenge in
// its Web Worker, waits in the queue (the draw of the start window is
// ordered half a second after it closes), is admitted, and buys through the
// ticket to "reserved".
func TestBrowserQueuedUserIsAdmitted(t *testing.T) {
	need(t)
	b := browser(t)
	s := createSaleWith(t, 2, 1, 7*time.Second, map[string]any{"ticketRequired": true, "name": "Queued drop",
		"waitingRoom": map[string]any{"startWindow": "3s"}, "powDifficulty": 12})
	topic := testenv.NewTopic(t, "browser-queue")
	startWriter(t, topic, s.ID)
	g := startGateway(t, topic, s, "-dev")
	g.waitReady(t, 20*time.Second)

	tb := newTab(t, b, "queue", 390, 844, true)
	tb.do(chromedp.Navigate(fmt.Sprintf("http://%s/sale/%d", g.addr, s.ID)))
	tb.waitState(10*time.Second, nil, "signin")
	tb.signIn("2001")
	tb.waitState(15*time.Second, nil, "open")
	tb.do(chromedp.Click(chromedp.ID("buy")))
	seen := map[string]bool{}
	tb.waitState(30*time.Second, func(st string) {
		if !seen[st] && (st == "proof" || st == "queued") {
			tb.shot(st)
			if st == "queued" {
				if txt := tb.text("status"); !strings.Contains(txt, "queue") {
					t.Errorf("queued status %q", txt)
				}
			}
		}
		seen[st] = true
	}, "reserved")
	if !seen["queued"] {
		t.Errorf("the page went to reserved without showing the queue (states %v)", seen)
	}
	if !seen["proof"] {
		t.Errorf("the page never showed the proof-of-work state (states %v)", seen)
	}
	tb.shot("admitted-reserved")
	t.Logf("screenshots: %s", strings.Join(tb.shots, " "))
}
