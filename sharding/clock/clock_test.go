package clock

import (
	"net/http/httptest"
	"testing"
	"time"
)

// The offset moves the wall clock only: a stamp taken under it is the
// time plus the offset, and parses and bounds refuse what they should.
func TestOffset(t *testing.T) {
	defer func() { _ = Set(0) }()
	if err := Set(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	got := Now()
	if d := got.Sub(before); d < 2*time.Second || d > 2*time.Second+time.Second {
		t.Fatalf("Now under +2s is %v after time.Now", d)
	}
	if got.Round(0) != got {
		t.Fatal("a shifted stamp keeps a monotonic reading")
	}
	if err := Set(25 * time.Hour); err == nil || Offset() != 2*time.Second {
		t.Fatalf("a 25 h offset: %v, offset now %v", err, Offset())
	}
	for _, v := range []string{"soon", "", "48h", "-25h"} {
		if _, err := Parse(v); err == nil {
			t.Errorf("Parse(%q) accepted", v)
		}
	}
	if d, err := Parse("-300ms"); err != nil || d != -300*time.Millisecond {
		t.Fatalf("Parse(-300ms) = %v, %v", d, err)
	}
	_ = Set(0)
	n := time.Now()
	if w := Wall(n); w != n {
		t.Fatal("with no offset Wall must return its argument as it is")
	}
}

// The knob answers its offset, sets a valid one, and refuses a bad one
// with 400 and the reason.
func TestHandler(t *testing.T) {
	defer func() { _ = Set(0) }()
	h := Handler()
	for _, c := range []struct {
		method, query string
		code          int
		offset        time.Duration
	}{
		{"PUT", "offset=300ms", 200, 300 * time.Millisecond},
		{"GET", "", 200, 300 * time.Millisecond},
		{"POST", "offset=-5s", 200, -5 * time.Second},
		{"PUT", "offset=soon", 400, -5 * time.Second},
		{"PUT", "offset=30h", 400, -5 * time.Second},
		{"DELETE", "", 405, -5 * time.Second},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(c.method, "/debug/clock?"+c.query, nil))
		if w.Code != c.code || Offset() != c.offset {
			t.Errorf("%s ?%s: %d %q, offset %v; want %d and %v", c.method, c.query, w.Code, w.Body, Offset(), c.code, c.offset)
		}
	}
}
