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
