package tokens

import (
	"testing"
	"time"
)

func BenchmarkMintHS256(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := MintHS256([]byte("s"), Claims{Users: 10000, Expires: time.Now().Add(time.Hour), IssuedAt: time.Now()}); err != nil {
			b.Fatal(err)
		}
	}
}
