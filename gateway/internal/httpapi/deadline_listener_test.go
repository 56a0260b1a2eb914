package httpapi

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

func deadlinePair(t *testing.T) (*DeadlineListener, net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewDeadlineListener(ln, 10*time.Millisecond)
	t.Cleanup(func() { _ = l.Close() })
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	server, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	return l, server, client
}

// A read deadline fails a blocked read, a tick late at most, with the same
// error a socket deadline gives; a new deadline re-arms the connection.
func TestDeadlineListenerRead(t *testing.T) {
	_, server, client := deadlinePair(t)
	start := time.Now()
	if err := server.SetReadDeadline(start.Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, err := server.Read(make([]byte, 1))
	took := time.Since(start)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read: %v, want a deadline error", err)
	}
	if took < 50*time.Millisecond || took > time.Second {
		t.Fatalf("the deadline fired after %v, want 50ms plus a tick", took)
	}
	// Re-armed: a later deadline lets data through.
	if err := server.SetReadDeadline(time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := server.Read(b); err != nil || b[0] != 'x' {
		t.Fatalf("read after re-arming: %q %v", b, err)
	}
	// No deadline: a read waits.
	if err := server.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(100 * time.Millisecond); _, _ = client.Write([]byte("y")) }()
	if _, err := server.Read(b); err != nil || b[0] != 'y' {
		t.Fatalf("read without a deadline: %q %v", b, err)
	}
}

// A write to a client that does not read fails at the write deadline.
func TestDeadlineListenerWrite(t *testing.T) {
	_, server, _ := deadlinePair(t)
	if err := server.SetWriteDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	var err error
	start := time.Now()
	for time.Since(start) < 5*time.Second && err == nil {
		_, err = server.Write(chunk) // the socket buffers fill, then Write blocks
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write: %v, want a deadline error", err)
	}
}

// Closed connections leave the sweep.
func TestDeadlineListenerForgetsClosed(t *testing.T) {
	l, server, _ := deadlinePair(t)
	if l.open() != 1 {
		t.Fatalf("%d conns", l.open())
	}
	_ = server.Close()
	if l.open() != 0 {
		t.Fatalf("%d conns after close", l.open())
	}
}

// Through the server: a client that sends half a request is dropped at the
// read timeout, an idle keep-alive connection at the idle timeout, and a
// prompt client is served on the same connection meanwhile.
func TestServerTimeoutsThroughDeadlineListener(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 5})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewDeadlineListener(ln, 10*time.Millisecond)
	srv := NewServer(e.h.Handle, ServerConfig{ReadTimeout: 200 * time.Millisecond, WriteTimeout: time.Second, IdleTimeout: 400 * time.Millisecond})
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	addr := ln.Addr().String()

	closedWithin := func(c net.Conn, limit time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		_ = c.SetReadDeadline(start.Add(limit))
		_, err := io.ReadAll(c) // returns at EOF: the server closed
		if err != nil {
			t.Fatalf("connection still open after %v: %v", limit, err)
		}
		return time.Since(start)
	}

	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := slow.Write([]byte("GET /api/flash-sales/sales/77 HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	if took := closedWithin(slow, 3*time.Second); took > 2*time.Second {
		t.Fatalf("half a request held the connection %v", took)
	}

	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	r := bufio.NewReader(idle)
	for i := range 3 { // served promptly, well within the timeouts
		if _, err := idle.Write([]byte("GET /api/flash-sales/sales/77 HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		_ = idle.SetReadDeadline(time.Now().Add(time.Second))
		resp, err := http.ReadResponse(r, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("request %d: %v %v", i, resp, err)
		}
		if _, err := io.ReadAll(resp.Body); err != nil {
			t.Fatalf("request %d: body: %v", i, err)
		}
		_ = resp.Body.Close()
		time.Sleep(150 * time.Millisecond)
	}
	start := time.Now()
	_ = idle.SetReadDeadline(start.Add(3 * time.Second))
	_, err = io.ReadAll(r)
	if err != nil || time.Since(start) > 2*time.Second {
		t.Fatalf("idle connection: %v after %v", err, time.Since(start))
	}
}
