package httpapi

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// scriptedConn serves its reads from chunks, one chunk per Read.
type scriptedConn struct {
	net.Conn
	chunks []string
}

func (c *scriptedConn) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	c.chunks = c.chunks[1:]
	return n, nil
}

func (c *scriptedConn) Write(p []byte) (int, error) { return len(p), nil }

// A head is followed across reads split anywhere, CRLF included; a bare LF
// fails the read that brings it; a body and the bytes after a head are not
// scanned until a response is written.
func TestHeadGuard(t *testing.T) {
	head := "GET /x HTTP/1.1\r\nHost: x\r\n\r\n"
	for cut := 1; cut < len(head); cut++ {
		c := &headConn{Conn: &scriptedConn{chunks: []string{head[:cut], head[cut:] + "body\nwith\nLF"}}, inHead: true}
		if _, err := io.ReadAll(c); err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
	}
	for _, bad := range []string{
		"GET /x HTTP/1.1\nHost: x\n\n",
		"GET /x HTTP/1.1\r\nHost: x\n\r\n",
		"GET /x HTTP/1.1\r\nHost: x\r\nX: y\n",
	} {
		for cut := 1; cut < len(bad); cut++ {
			c := &headConn{Conn: &scriptedConn{chunks: []string{bad[:cut], bad[cut:]}}, inHead: true}
			if _, err := io.ReadAll(c); err != errBareLF {
				t.Fatalf("%q cut at %d: %v, want errBareLF", bad, cut, err)
			}
			if _, err := c.Read(make([]byte, 8)); err != errBareLF {
				t.Fatalf("a read after the bare LF: %v", err)
			}
		}
	}
	// After a response, the next head is scanned again.
	c := &headConn{Conn: &scriptedConn{chunks: []string{head, "GET /y HTTP/1.1\nHost: x\n\n"}}, inHead: true}
	buf := make([]byte, 256)
	if _, err := c.Read(buf); err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte("HTTP/1.1 204 No Content\r\n\r\n"))
	if _, err := c.Read(buf); err != errBareLF {
		t.Fatalf("the second head: %v, want errBareLF", err)
	}
}

// A keep-alive connection answers its first request, then refuses a second
// with bare LFs at once, through a real server.
func TestHeadGuardKeepAlive(t *testing.T) {
	e := newEnv(t, envOpt{stockPerShard: 1})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(e.h.Handle, ServerConfig{ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second, IdleTimeout: time.Minute})
	go func() { _ = srv.Serve(GuardHeads(ln)) }()
	defer func() { _ = srv.Shutdown() }()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	read := func() string {
		b := make([]byte, 4096)
		n, err := conn.Read(b)
		if err != nil {
			t.Fatal(err)
		}
		return string(b[:n])
	}
	_, _ = io.WriteString(conn, "GET /api/flash-sales/time HTTP/1.1\r\nHost: x\r\n\r\n")
	if r := read(); !strings.HasPrefix(r, "HTTP/1.1 200") {
		t.Fatalf("first request: %q", r)
	}
	_, _ = io.WriteString(conn, "GET /api/flash-sales/time HTTP/1.1\nHost: x\n\n")
	if r := read(); !strings.HasPrefix(r, "HTTP/1.1 400") || !strings.Contains(r, `{"error":"BAD_REQUEST"}`) {
		t.Fatalf("second request, bare LF: %q", r)
	}
}
