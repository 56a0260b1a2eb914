package app_test

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkAlreadyPurchased measures, over loopback HTTP against the real
// Redis Cluster, a repeat purchase by a buyer who holds an order while stock
// remains: token cache hit, per-user bucket, one round trip (an HGET of the
// buyer record: the gateway answered these tokens before, see -repeat-read), 409.
func BenchmarkAlreadyPurchased(b *testing.B) {
	s := start(b, 1_000_000, 1, nil, "")
	const users = 256
	toks := make([]string, users)
	for i := range toks {
		toks[i] = token(b, uint64(i+1))
		if code, body := s.do("POST", s.purchasePath(), toks[i]); code != 202 {
			b.Fatalf("%d %s", code, body)
		}
	}
	url := "http://" + s.app.Addr() + s.purchasePath()
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.Header.SetMethod("POST")
		req.SetRequestURI(url)
		i := 0
		for pb.Next() {
			req.Header.Set("Authorization", "Bearer "+toks[i%users])
			i++
			if err := s.client.Do(req, resp); err != nil || resp.StatusCode() != 409 {
				b.Fatalf("%v %d %s", err, resp.StatusCode(), resp.Body())
			}
		}
	})
}

// BenchmarkSoldOutHTTP measures the sold-out refusal over loopback HTTP.
func BenchmarkSoldOutHTTP(b *testing.B) {
	s := start(b, 1, 1, nil, "")
	s.do("POST", s.purchasePath(), token(b, 1))
	s.do("POST", s.purchasePath(), token(b, 2))
	tok := token(b, 3)
	url := "http://" + s.app.Addr() + s.purchasePath()
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.Header.SetMethod("POST")
		req.SetRequestURI(url)
		req.Header.Set("Authorization", "Bearer "+tok)
		for pb.Next() {
			if err := s.client.Do(req, resp); err != nil || resp.StatusCode() != 410 {
				b.Fatalf("%v %d %s", err, resp.StatusCode(), resp.Body())
			}
		}
	})
}
