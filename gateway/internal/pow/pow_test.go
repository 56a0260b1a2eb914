package pow

import (
	"crypto/sha256"
	"strconv"
	"strings"
	"testing"
	"time"

	"flashsale/gateway/internal/mac"
)

func issuer(t testing.TB, cur, prev string) *Issuer {
	t.Helper()
	var p []byte
	if prev != "" {
		p = []byte(prev)
	}
	r, err := mac.NewRing([]byte(cur), p)
	if err != nil {
		t.Fatal(err)
	}
	return NewIssuer(r, time.Minute)
}

func TestSolveAndVerify(t *testing.T) {
	is := issuer(t, "pow-secret-0123456789", "")
	now := time.Unix(1_800_000_000, 0)
	for _, d := range []int{1, 4, 8, 12} {
		c := is.AppendChallenge(nil, now, 7, 42, d)
		if len(c) != ChallengeLen || Difficulty(c) != d {
			t.Fatalf("challenge %q: length %d difficulty %d", c, len(c), Difficulty(c))
		}
		n, proof := Solve(c, d)
		sum := sha256.Sum256([]byte(string(c) + ":" + strconv.FormatUint(n, 10)))
		if LeadingZeros(&sum) < d || string(proof) != string(c)+":"+strconv.FormatUint(n, 10) {
			t.Fatalf("d=%d: solver's nonce %d does not meet it", d, n)
		}
		if got, res := is.Verify(now, proof, 7, 42); res != OK || got != d {
			t.Fatalf("d=%d: %v %d", d, res, got)
		}
	}
	a, b := is.AppendChallenge(nil, now, 7, 42, 8), is.AppendChallenge(nil, now, 7, 42, 8)
	if string(a) == string(b) {
		t.Fatal("two challenges of one second are equal: one solve would serve both")
	}
}

func TestVerifyRefusals(t *testing.T) {
	is := issuer(t, "pow-secret-0123456789", "")
	now := time.Unix(1_800_000_000, 0)
	c := string(is.AppendChallenge(nil, now, 7, 42, 10))
	_, good := Solve([]byte(c), 10)
	weak := ""
	for n := 0; ; n++ {
		p := c + ":" + strconv.Itoa(n)
		if sum := sha256.Sum256([]byte(p)); LeadingZeros(&sum) < 10 {
			weak = p
			break
		}
	}
	other := issuer(t, "another-secret-0123456789", "")
	_, foreign := Solve(other.AppendChallenge(nil, now, 7, 42, 4), 4)
	swap := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	cases := []struct {
		name, proof string
		sale        int64
		user        uint64
		at          time.Time
		want        Result
	}{
		{"empty", "", 7, 42, now, Malformed},
		{"challenge only", c, 7, 42, now, Malformed},
		{"no nonce", c + ":", 7, 42, now, Malformed},
		{"signed nonce", c + ":-1", 7, 42, now, Malformed},
		{"hex nonce", c + ":ff", 7, 42, now, Malformed},
		{"nonce with space", c + ": 1", 7, 42, now, Malformed},
		{"nonce past uint64", c + ":18446744073709551616", 7, 42, now, Malformed},
		{"nonce of 21 digits", c + ":000000000000000000001", 7, 42, now, Malformed},
		{"short challenge", c[1:] + ":1", 7, 42, now, Malformed},
		{"not base64url", "!" + c[1:] + ":1", 7, 42, now, Malformed},
		{"tag changed", swap(string(good), ChallengeLen-3), 7, 42, now, Forged},
		{"difficulty lowered", lowered(t, c), 7, 42, now, Forged},
		{"another key's challenge", string(foreign), 7, 42, now, Forged},
		{"another user's", string(good), 7, 43, now, Other},
		{"another sale's", string(good), 8, 42, now, Other},
		{"expired", string(good), 7, 42, now.Add(time.Minute), Expired},
		{"not enough work", weak, 7, 42, now, Weak},
	}
	for _, tc := range cases {
		if _, got := is.Verify(tc.at, []byte(tc.proof), tc.sale, tc.user); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	rot := issuer(t, "pow-secret-new-0123456789", "pow-secret-0123456789")
	if _, got := rot.Verify(now, good, 7, 42); got != OK {
		t.Errorf("a proof of the previous key during a rotation: %v", got)
	}
}

// lowered rewrites the difficulty byte of challenge c to 1 and keeps the
// old tag: a client cannot make its own work cheaper.
func lowered(t *testing.T, c string) string {
	raw, err := b64.DecodeString(c)
	if err != nil {
		t.Fatal(err)
	}
	raw[1] = 1
	c2 := b64.EncodeToString(raw)
	_, p := Solve([]byte(c2), 1)
	if !strings.HasPrefix(string(p), c2) {
		t.Fatal("solver")
	}
	return string(p)
}

func TestLevel(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	off := &Level{Auto: 100}
	for i := 0; i < 10000; i++ {
		off.Arrive(t0)
	}
	if d := off.For(t0.Add(time.Second), 0); d != 0 {
		t.Fatalf("a sale without proof of work got difficulty %d from the rate", d)
	}
	l := &Level{Operator: 12, Auto: 100}
	if d := l.For(t0, 0); d != 12 {
		t.Fatalf("operator's floor: %d", d)
	}
	if d := l.For(t0, 16); d != 16 {
		t.Fatalf("the sale's higher difficulty: %d", d)
	}
	for i, want := range map[int]int{50: 12, 101: 13, 200: 14, 399: 14, 400: 15, 1_000_000: 20} {
		l := &Level{Operator: 12, Auto: 100}
		for j := 0; j < i; j++ {
			l.Arrive(t0)
		}
		l.Arrive(t0.Add(time.Second)) // the next second starts
		if d := l.For(t0.Add(time.Second), 0); d != want {
			t.Errorf("%d arrivals a second: difficulty %d, want %d", i, d, want)
		}
		if d := l.For(t0.Add(3*time.Second), 0); d != 12 {
			t.Errorf("two quiet seconds after %d: difficulty %d, want back to 12", i, d)
		}
	}
	if d := (&Level{Operator: 30, Auto: 1}).For(t0, 0); d != 30 {
		t.Fatal(d)
	}
}
