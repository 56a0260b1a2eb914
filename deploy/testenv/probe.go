package testenv

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Get fetches url (3 s timeout) and returns its status and body.
func Get(t testing.TB, url string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// WaitListening waits up to within for addr to accept a connection.
func WaitListening(t testing.TB, addr string, within time.Duration) {
	t.Helper()
	for wait := time.Now(); time.Since(wait) < within; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			_ = c.Close()
			return
		}
	}
	t.Fatalf("nothing listens on %s after %v", addr, within)
}

// CheckGaveUp checks that a process's start, stopped while it waited,
// ended within 3 s with an error containing want and freed its admin port.
func CheckGaveUp(t testing.TB, errc <-chan error, want, admin string) {
	t.Helper()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New after its ctx ended: %v, want %q", err, want)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("New still waits 3 s after its ctx ended")
	}
	ln, err := net.Listen("tcp", admin)
	if err != nil {
		t.Fatalf("the admin port is still taken after New gave up: %v", err)
	}
	_ = ln.Close()
}

// Start is a process's start (New) run in the background, as a test of a
// start that waits for its servers needs it.
type Start[T any] struct {
	done chan started[T]
}

type started[T any] struct {
	v   T
	err error
}

// StartAsync runs start in a goroutine.
func StartAsync[T any](start func() (T, error)) *Start[T] {
	s := &Start[T]{done: make(chan started[T], 1)}
	go func() {
		v, err := start()
		s.done <- started[T]{v, err}
	}()
	return s
}

// StillWaiting fails the test if the start has returned while what was away.
func (s *Start[T]) StillWaiting(t testing.TB, what string) {
	t.Helper()
	select {
	case r := <-s.done:
		t.Fatalf("New returned while %s was away: %v", what, r.err)
	default:
	}
}

// Await waits up to 10 s for the start to return once what answers again,
// fails the test on its error, and logs how long it took.
func (s *Start[T]) Await(t testing.TB, what string) T {
	t.Helper()
	back := time.Now()
	var r started[T]
	select {
	case r = <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("New still waits 10 s after %s answered", what)
	}
	if r.err != nil {
		t.Fatalf("New after %s answered: %v", what, r.err)
	}
	t.Logf("started %v after %s answered", time.Since(back).Round(time.Millisecond), what)
	return r.v
}

// WaitReady waits up to 10 s for the admin listener at admin to answer
// /readyz 200.
func WaitReady(t testing.TB, admin string) {
	t.Helper()
	for wait := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		code, body := Get(t, "http://"+admin+"/readyz")
		if code == 200 {
			return
		}
		if time.Since(wait) > 10*time.Second {
			t.Fatalf("/readyz 10 s after the start: %d %q", code, body)
		}
	}
}
