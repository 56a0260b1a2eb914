package pow

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkSolve measures the Go solver (one core) at each difficulty: one
// op is one fresh challenge solved, so ns/op is the mean solve time and
// hashes/op the work (about 2^d).
//
//	go test -run '^$' -bench Solve -benchtime 20x ./gateway/internal/pow
func BenchmarkSolve(b *testing.B) {
	is := issuer(b, "pow-secret-0123456789", "")
	now := time.Now()
	for _, d := range []int{8, 12, 16, 18, 20} {
		b.Run("d="+strconv.Itoa(d), func(b *testing.B) {
			b.ReportAllocs()
			var hashes uint64
			for i := 0; i < b.N; i++ {
				n, _ := Solve(is.AppendChallenge(nil, now, 7, uint64(i), d), d)
				hashes += n + 1
			}
			b.ReportMetric(float64(hashes)/float64(b.N), "hashes/op")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(hashes), "ns/hash")
		})
	}
}

// BenchmarkVerify is the gateway's cost of one proof.
func BenchmarkVerify(b *testing.B) {
	is := issuer(b, "pow-secret-0123456789", "")
	now := time.Now()
	_, proof := Solve(is.AppendChallenge(nil, now, 7, 42, 12), 12)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, r := is.Verify(now, proof, 7, 42); r != OK {
			b.Fatal(r)
		}
	}
}
