package load

import (
	"bytes"
	"net"
	"testing"
)

// rawServer answers every request on a keep-alive connection with resp,
// without allocating per request, so allocation counts measure the client.
func rawServer(t testing.TB, resp []byte) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 64<<10)
				n := 0
				for {
					m, err := c.Read(buf[n:])
					if err != nil {
						return
					}
					n += m
					for {
						i := bytes.Index(buf[:n], []byte("\r\n\r\n"))
						if i < 0 {
							break
						}
						if _, err := c.Write(resp); err != nil {
							return
						}
						copy(buf, buf[i+4:n])
						n -= i + 4
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

var soldOutResp = []byte("HTTP/1.1 410 Gone\r\nServer: raw\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{\"error\":\"SOLD_OUT\"}")

type fakeTokens struct{ tok []byte }

func (f fakeTokens) Token(int) []byte { return f.tok }
