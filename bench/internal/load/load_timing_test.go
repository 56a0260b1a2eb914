package load

import (
	"context"
	"testing"
)

func BenchmarkAppendRequest(b *testing.B) {
	rb := newRequestBuilder("127.0.0.1:8080", []int64{1}, fakeTokens{make([]byte, 150)}, false, true, "run1", 1)
	buf := make([]byte, 0, 1024)
	a := Action{User: 12345}
	b.ReportAllocs()
	for b.Loop() {
		buf = rb.appendRequest(buf[:0], &a)
	}
}

func BenchmarkParseResponse(b *testing.B) {
	var resp response
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseResponse(soldOutResp, &resp); err != nil {
			b.Fatal(err)
		}
		_ = jsonString(resp.body, `"error"`)
	}
}

// BenchmarkClosedLoop measures the whole client loop per request against an
// in-process server (which shares the CPU, so read it as an upper bound).
func BenchmarkClosedLoop(b *testing.B) {
	addr := rawServer(b, soldOutResp)
	e, err := New(Options{Addr: addr, Conns: 16, Workers: 1, Items: []int64{1}, Tokens: fakeTokens{make([]byte, 150)}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	if _, err := e.Run(context.Background(), &Plan{Users: 1, Items: 1, Count: int64(b.N)}); err != nil {
		b.Fatal(err)
	}
}
