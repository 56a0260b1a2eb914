package app

import (
	"context"
	"testing"
	"time"

	"flashsale/gateway/internal/auth"
)

// -jwt-skew 0 means no skew: a token expired 5s ago is refused; with the
// default 30s it is accepted.
func TestSkewFlagZeroMeansNone(t *testing.T) {
	secret := []byte("a-test-secret-of-32-bytes-length")
	tok, err := auth.MintHS256(secret, 7, time.Now().Add(-5*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flag time.Duration
		ok   bool
	}{{0, false}, {30 * time.Second, true}} {
		v, err := auth.New(context.Background(), auth.Config{HS256Secret: secret, Skew: skew(c.flag)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = v.Verify(time.Now(), []byte(tok))
		v.Close()
		if (err == nil) != c.ok {
			t.Errorf("-jwt-skew %v: token expired 5s ago: err %v, want accepted %v", c.flag, err, c.ok)
		}
	}
}
