package room

import (
	"testing"
	"time"

	"flashsale/gateway/internal/mac"
)

func ring(t testing.TB, cur, prev string) *mac.Ring {
	t.Helper()
	var p []byte
	if prev != "" {
		p = []byte(prev)
	}
	r, err := mac.NewRing([]byte(cur), p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPassRoundTrip(t *testing.T) {
	rg := ring(t, "room-secret-0123456789", "")
	now := time.Unix(1_800_000_000, 0)
	in := Pass{Kind: Drawn, SaleID: 1<<32 - 1, UserID: 1<<64 - 1, Number: 1<<52 - 1, Expires: now.Unix() + 60}
	text := AppendPass(nil, rg, in)
	if len(text) != PassLen {
		t.Fatalf("pass of %d bytes, want %d", len(text), PassLen)
	}
	out, prob := ParsePass(rg, text, now, in.SaleID, in.UserID)
	if prob != PassOK || out != in {
		t.Fatalf("round trip: %+v %v, want %+v", out, prob, in)
	}
}

func TestPassRefusals(t *testing.T) {
	rg := ring(t, "room-secret-0123456789", "")
	now := time.Unix(1_800_000_000, 0)
	good := Pass{Kind: Late, SaleID: 7, UserID: 42, Number: 3, Expires: now.Unix() + 60}
	text := string(AppendPass(nil, rg, good))
	flip := func(i int) string {
		b := []byte(text)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	other := ring(t, "another-secret-0123456789", "")
	cases := []struct {
		name string
		text string
		sale int64
		user uint64
		at   time.Time
		want Problem
	}{
		{"empty", "", 7, 42, now, PassMalformed},
		{"short", text[:PassLen-1], 7, 42, now, PassMalformed},
		{"long", text + "A", 7, 42, now, PassMalformed},
		{"not base64url", "!" + text[1:], 7, 42, now, PassMalformed},
		{"padded base64", text[:PassLen-1] + "=", 7, 42, now, PassMalformed},
		{"version", string(AppendPass(nil, rg, good))[:0] + versionTwo(t, rg, good), 7, 42, now, PassMalformed},
		{"kind", string(AppendPass(nil, rg, Pass{Kind: 3, SaleID: 7, UserID: 42, Expires: good.Expires})), 7, 42, now, PassMalformed},
		{"tag flipped", flip(PassLen - 3), 7, 42, now, PassForged},
		{"body flipped", flip(10), 7, 42, now, PassForged},
		{"signed with another key", string(AppendPass(nil, other, good)), 7, 42, now, PassForged},
		{"another user's", text, 7, 43, now, PassOther},
		{"another sale's", text, 8, 42, now, PassOther},
		{"expired", text, 7, 42, now.Add(time.Minute), PassExpired},
	}
	for _, c := range cases {
		if _, got := ParsePass(rg, []byte(c.text), c.at, c.sale, c.user); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	rot := ring(t, "room-secret-new-0123456789", "room-secret-0123456789")
	if _, got := ParsePass(rot, []byte(text), now, 7, 42); got != PassOK {
		t.Errorf("a pass of the previous key during a rotation: %v", got)
	}
}

// versionTwo signs a pass whose version byte is 2: a well-signed pass of a
// format this gateway does not know is malformed, not forged.
func versionTwo(t *testing.T, rg *mac.Ring, p Pass) string {
	t.Helper()
	b := AppendPass(nil, rg, p)
	raw := make([]byte, passRaw)
	if _, err := b64.Decode(raw, b); err != nil {
		t.Fatal(err)
	}
	raw[0] = 2
	raw = rg.Append(raw[:passBody], raw[:passBody])
	return b64.EncodeToString(raw)
}
