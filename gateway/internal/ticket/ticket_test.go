package ticket

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"testing"
	"time"
)

var (
	keyA = []byte("ticket-key-A-0123456789")
	keyB = []byte("ticket-key-B-9876543210")
)

func mustKeys(t *testing.T, cur, prev []byte) *Keys {
	t.Helper()
	k, err := New(cur, prev, 0)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestRoundTripAndBindings(t *testing.T) {
	k := mustKeys(t, keyA, nil)
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	now := start.Add(3 * time.Second)
	tok, exp := k.Append(nil, 42, 7, now)
	if len(tok) != TextLen || !exp.Equal(now.Add(DefaultLifetime)) {
		t.Fatalf("ticket %q (%d chars), expiry %v", tok, len(tok), exp)
	}
	cases := []struct {
		name  string
		user  uint64
		sale  int64
		start time.Time
		at    time.Time
		want  error
	}{
		{"valid", 42, 7, start, now, nil},
		{"valid just before expiry", 42, 7, start, exp.Add(-time.Millisecond), nil},
		{"expired", 42, 7, start, exp, ErrExpired},
		{"another user", 43, 7, start, now, ErrOtherUser},
		{"another sale", 42, 8, start, now, ErrOtherSale},
		{"issued before the start", 42, 7, now.Add(time.Second), now.Add(2 * time.Second), ErrTooEarly},
	}
	for _, c := range cases {
		if err := k.Verify(tok, c.user, c.sale, c.start.UnixNano(), c.at); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

// TestMACIsHMACSHA256 checks the hand-rolled HMAC against crypto/hmac.
func TestMACIsHMACSHA256(t *testing.T) {
	long := bytes.Repeat([]byte("k"), 100) // longer than a block: hashed first
	for _, secret := range [][]byte{keyA, long} {
		k := newKey(secret)
		var body [bodyLen]byte
		for i := range body {
			body[i] = byte(i * 7)
		}
		h := hmac.New(sha256.New, secret)
		h.Write(body[:])
		want := h.Sum(nil)[:macLen]
		if got := k.mac(&body); !bytes.Equal(got[:], want) {
			t.Errorf("key of %d bytes: mac %x, want %x", len(secret), got, want)
		}
	}
}

func TestForgedAndMalformed(t *testing.T) {
	k := mustKeys(t, keyA, nil)
	now := time.Now()
	start := now.Add(-time.Minute).UnixNano()
	tok, _ := k.Append(nil, 42, 7, now)
	other, _ := mustKeys(t, keyB, nil).Append(nil, 42, 7, now)
	if err := k.Verify(other, 42, 7, start, now); !errors.Is(err, ErrSignature) {
		t.Errorf("signed with another key: %v", err)
	}
	// Every changed character either breaks the encoding or the signature.
	for i := range tok {
		bad := bytes.Clone(tok)
		bad[i] = map[bool]byte{true: 'A', false: 'B'}[bad[i] != 'A']
		if err := k.Verify(bad, 42, 7, start, now); err == nil {
			t.Errorf("character %d changed: accepted", i)
		}
	}
	raw, _ := base64.RawURLEncoding.DecodeString(string(tok))
	raw[0] = 2
	malformed := map[string][]byte{
		"empty":         nil,
		"short":         tok[:TextLen-1],
		"long":          append(bytes.Clone(tok), 'A'),
		"not base64":    bytes.Repeat([]byte("*"), TextLen),
		"padding":       append(bytes.Clone(tok[:TextLen-1]), '='),
		"std alphabet":  bytes.Repeat([]byte("+"), TextLen),
		"wrong version": []byte(base64.RawURLEncoding.EncodeToString(raw)),
	}
	for name, b := range malformed {
		if err := k.Verify(b, 42, 7, start, now); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
}

// TestRotation: after a rotation (B signs, A still verifies) tickets signed
// with A stay valid until they expire; once A is dropped they are refused.
func TestRotation(t *testing.T) {
	now := time.Now()
	start := now.Add(-time.Minute).UnixNano()
	old, exp := mustKeys(t, keyA, nil).Append(nil, 42, 7, now)
	rotated := mustKeys(t, keyB, keyA)
	if err := rotated.Verify(old, 42, 7, start, now.Add(30*time.Second)); err != nil {
		t.Fatalf("old ticket during the rotation: %v", err)
	}
	if err := rotated.Verify(old, 42, 7, start, exp); !errors.Is(err, ErrExpired) {
		t.Fatalf("old ticket past its expiry: %v", err)
	}
	fresh, _ := rotated.Append(nil, 42, 7, now)
	if err := mustKeys(t, keyB, nil).Verify(fresh, 42, 7, start, now); err != nil {
		t.Fatalf("new key signs: %v", err)
	}
	if err := mustKeys(t, keyB, nil).Verify(old, 42, 7, start, now); !errors.Is(err, ErrSignature) {
		t.Fatalf("old key dropped: %v", err)
	}
}

func TestNewRefusesShortKeys(t *testing.T) {
	if _, err := New([]byte("short"), nil, 0); err == nil {
		t.Error("short current key accepted")
	}
	if _, err := New(keyA, []byte("short"), 0); err == nil {
		t.Error("short previous key accepted")
	}
}
