//go:build !race

package load

import (
	"context"
	"runtime"
	"testing"
)

func TestAppendRequestDoesNotAllocate(t *testing.T) {
	rb := newRequestBuilder("127.0.0.1:8080", []int64{1, 2}, fakeTokens{[]byte("aaa.bbb.ccc")}, true, true, "run1", 1)
	buf := make([]byte, 0, 1024)
	a := Action{User: 70000, Item: 1, Click: 2}
	pay := Action{User: 3, Kind: Pay, Order: [16]byte{1, 2, 3}}
	if n := testing.AllocsPerRun(1000, func() {
		buf = rb.appendRequest(buf[:0], &a)
		buf = rb.appendRequest(buf[:0], &pay)
	}); n != 0 {
		t.Fatalf("appendRequest: %v allocs/op", n)
	}
}

func TestParseAndRecordDoNotAllocate(t *testing.T) {
	accepted := []byte("HTTP/1.1 202 Accepted\r\nContent-Length: 64\r\nRetry-After: 1\r\n\r\n{\"orderId\":\"0000002a-0000-8000-8000-000000000001\",\"status\":\"PENDING\"}")
	r := NewRecorder()
	r.recordResponse(Purchase, 410, []byte("SOLD_OUT"), 0, 1000, 900) // the first second's histogram
	var resp response
	if n := testing.AllocsPerRun(1000, func() {
		if m, err := parseResponse(soldOutResp, &resp); err != nil || m != len(soldOutResp) {
			t.Fatalf("parse: %d %v", m, err)
		}
		r.recordResponse(Purchase, resp.status, jsonString(resp.body, `"error"`), 5e8, 1234567, 34567)
		if _, err := parseResponse(accepted, &resp); err != nil {
			t.Fatal(err)
		}
		_ = jsonString(resp.body, `"orderId"`)
		r.recordSend(5e8, 100, 1e7, false)
	}); n != 0 {
		t.Fatalf("parse and record: %v allocs/op", n)
	}
}

// TestLoopDoesNotAllocate runs the whole send/receive loop twice, once short
// and once 20 times longer, against a server that does not allocate: the
// extra requests must not add allocations beyond a few per second of run
// (the per-second histograms).
func TestLoopDoesNotAllocate(t *testing.T) {
	addr := rawServer(t, soldOutResp)
	e, err := New(Options{Addr: addr, Conns: 8, Workers: 2, Items: []int64{1}, Tokens: fakeTokens{[]byte("t.t.t")}, IdempotencyKeys: true})
	if err != nil {
		t.Fatal(err)
	}
	mallocs := func(n int64) uint64 {
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		res, err := e.Run(context.Background(), &Plan{Users: 100, Items: 1, Count: n})
		runtime.ReadMemStats(&b)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Recorder.Status[Purchase][410]; got != n {
			t.Fatalf("410s = %d, want %d", got, n)
		}
		return b.Mallocs - a.Mallocs
	}
	mallocs(1000) // warm up
	short, long := mallocs(2000), mallocs(40000)
	t.Logf("mallocs: 2000 requests %d, 40000 requests %d", short, long)
	if long > short+200 {
		t.Fatalf("38000 more requests cost %d more allocations", long-short)
	}
}
