package mac

import (
	"crypto/hmac"
	"crypto/sha256"
	"math/rand/v2"
	"testing"
)

func TestAgreesWithCryptoHMAC(t *testing.T) {
	for _, n := range []int{16, 32, 64, 65, 200} {
		secret := make([]byte, n)
		for i := range secret {
			secret[i] = byte(rand.IntN(256))
		}
		r, err := NewRing(secret, nil)
		if err != nil {
			t.Fatal(err)
		}
		for m := 0; m <= MaxMessage; m += 7 {
			msg := make([]byte, m)
			for i := range msg {
				msg[i] = byte(rand.IntN(256))
			}
			h := hmac.New(sha256.New, secret)
			h.Write(msg)
			want := h.Sum(nil)[:Size]
			if got := r.Append(nil, msg); string(got) != string(want) {
				t.Fatalf("secret %d msg %d: %x, crypto/hmac says %x", n, m, got, want)
			}
			if !r.Check(msg, want) {
				t.Fatal("Check refused its own tag")
			}
		}
	}
}

func TestRotation(t *testing.T) {
	old, _ := NewRing([]byte("0123456789abcdef-old"), nil)
	rot, _ := NewRing([]byte("0123456789abcdef-new"), []byte("0123456789abcdef-old"))
	after, _ := NewRing([]byte("0123456789abcdef-new"), nil)
	msg := []byte("pass")
	tag := old.Append(nil, msg)
	if !rot.Check(msg, tag) {
		t.Fatal("a tag of the previous key is refused during the rotation")
	}
	if after.Check(msg, tag) {
		t.Fatal("a tag of a retired key is accepted")
	}
	if rot.Check(msg, tag[:Size-1]) || rot.Check([]byte("pasS"), tag) {
		t.Fatal("a short tag or another message is accepted")
	}
	if _, err := NewRing([]byte("short"), nil); err == nil {
		t.Fatal("a short secret is accepted")
	}
}
