package beacon

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Rounds of quicknet as its relays served them (signatures are public; each
// one below verifies against the pinned key, which no one but the League of
// Entropy's threshold can sign for).
var quicknetRounds = []struct {
	round      uint64
	sig        string
	randomness string // when the source also gave it
}{
	{1000, "b44679b9a59af2ec876b1a6b1ad52ea9b1615fc3982b19576350f93447cb1125e342b73a8dd2bacbe47e4b6b63ed5e39", ""},
	{12040883, "929906c959032ab363c9f26570d215d66f5c06cb0c44fe508c12bb5839f04ec895bb6868e5b9ff13ab289bdb5266b394", ""},
	{32281667, "b0f5ae301358ff87a9d3dd539ed4a07c0148b1ab4f7b61a8ca43c7e9ca7ca9553e4faae9188deb30b2cd1a7f447e3e5b", "4fd2fc55983dbfa3f446d8a0bd56f16cc8c5e76afd1ec154b60d477cbabed13b"},
	{32285085, "81dbce51d584d90d618547f4b50391d53ace6f6b9aeb8fb67e1879427af9d0310ac0ec6f519271d9a313ee84b378d416", ""},
	{32285086, "a64d99fd7fa3e48912be7209c7b69c72c88fc5224be2516949b6f29f3a4b7e3fa069dd58b2bbb4bf2c34ae61ef631a44", ""},
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRealRoundsVerify(t *testing.T) {
	for _, r := range quicknetRounds {
		sig := unhex(t, r.sig)
		if err := Quicknet.Verify(r.round, sig); err != nil {
			t.Errorf("round %d: %v", r.round, err)
		}
		if r.randomness != "" {
			if got := Randomness(sig); hex.EncodeToString(got[:]) != r.randomness {
				t.Errorf("round %d: randomness %x, want %s", r.round, got, r.randomness)
			}
		}
	}
}

// TestForgedRoundsAreRefused: a signature moved to another round, one with
// a bit flipped, another chain's signature of the same round (drand's
// fastnet round 1000) and malformed input are all refused.
func TestForgedRoundsAreRefused(t *testing.T) {
	good := unhex(t, quicknetRounds[0].sig)
	flipped := append([]byte(nil), good...)
	flipped[20] ^= 0x01
	cases := []struct {
		name  string
		round uint64
		sig   []byte
		sigOK bool // the error is ErrSignature (a well-formed point that does not verify)
	}{
		{"the next round's", 1001, good, true},
		{"a bit flipped", 1000, flipped, false},
		{"fastnet's round 1000", 1000, unhex(t, "b09eacd45767c4d58306b98901ad0d6086e2663766f3a4ec71d00cf26f0f49eaf248abc7151c60cf419c4e8b37e80412"), true},
		{"empty", 1000, nil, false},
		{"47 bytes", 1000, good[:47], false},
		{"96 bytes (a G2 point's length)", 1000, append(append([]byte(nil), good...), good...), false},
		{"all zero", 1000, make([]byte, 48), false},
		{"round 0", 0, good, false},
	}
	for _, c := range cases {
		err := Quicknet.Verify(c.round, c.sig)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if c.sigOK && !errors.Is(err, ErrSignature) {
			t.Errorf("%s: %v, want ErrSignature", c.name, err)
		}
	}
}

func TestRoundTimes(t *testing.T) {
	genesis := time.Unix(GenesisUnix, 0)
	for _, c := range []struct {
		t    time.Time
		want uint64
	}{
		{genesis.Add(-time.Second), 0},
		{genesis, 1},
		{genesis.Add(2999 * time.Millisecond), 1},
		{genesis.Add(3 * time.Second), 2},
		{Quicknet.TimeOf(32285086), 32285086},
	} {
		if got := Quicknet.RoundAt(c.t); got != c.want {
			t.Errorf("Quicknet.RoundAt(%v) = %d, want %d", c.t, got, c.want)
		}
	}
	freeze := time.Date(2026, 12, 7, 1, 0, 0, 500e6, time.UTC)
	r := Quicknet.FirstAfter(freeze.Add(30 * time.Second))
	if at := Quicknet.TimeOf(r); at.Before(freeze.Add(30*time.Second)) || at.Sub(freeze.Add(30*time.Second)) >= Period {
		t.Fatalf("FirstAfter: round %d at %v, want the first at or after %v", r, at, freeze.Add(30*time.Second))
	}
	if Quicknet.FirstAfter(Quicknet.TimeOf(500)) != 500 || Quicknet.FirstAfter(genesis.Add(-time.Hour)) != 1 {
		t.Fatalf("FirstAfter on a round's own time: %d; before the genesis: %d", Quicknet.FirstAfter(Quicknet.TimeOf(500)), Quicknet.FirstAfter(genesis.Add(-time.Hour)))
	}
}

func BenchmarkVerify(b *testing.B) {
	sig, _ := hex.DecodeString(quicknetRounds[0].sig)
	for b.Loop() {
		if err := Quicknet.Verify(1000, sig); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDevChainSignsItsOwnRoundsOnly: the local chain signs and verifies its
// rounds, quicknet refuses them (and the other way round), and quicknet
// cannot be signed here.
func TestDevChainSignsItsOwnRoundsOnly(t *testing.T) {
	sig, err := Dev.Sign(42)
	if err != nil {
		t.Fatal(err)
	}
	if err := Dev.Verify(42, sig); err != nil {
		t.Fatalf("dev round 42: %v", err)
	}
	if err := Dev.Verify(43, sig); !errors.Is(err, ErrSignature) {
		t.Fatalf("dev round 42's signature as round 43: %v, want ErrSignature", err)
	}
	if err := Quicknet.Verify(42, sig); !errors.Is(err, ErrSignature) {
		t.Fatalf("a dev signature checked as quicknet's: %v, want ErrSignature", err)
	}
	real := unhex(t, quicknetRounds[0].sig)
	if err := Dev.Verify(quicknetRounds[0].round, real); !errors.Is(err, ErrSignature) {
		t.Fatalf("a quicknet signature checked as dev's: %v, want ErrSignature", err)
	}
	if _, err := Quicknet.Sign(1); err == nil {
		t.Fatal("quicknet signed a round here")
	}
	for _, c := range []*Chain{Quicknet, Dev} {
		if got, err := ByHash(c.Hash); err != nil || got != c {
			t.Fatalf("ByHash(%s): %v, %v", c.Name, got, err)
		}
		if got, err := ByName(c.Name); err != nil || got != c {
			t.Fatalf("ByName(%s): %v, %v", c.Name, got, err)
		}
	}
	if _, err := ByHash("00"); err == nil {
		t.Fatal("ByHash accepted an unknown chain")
	}
	close := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	if r := Dev.RoundFor(close); Dev.TimeOf(r).Before(close.Add(Dev.Lead)) || Dev.TimeOf(r).Sub(close.Add(Dev.Lead)) >= Dev.Period {
		t.Fatalf("Dev.RoundFor: round %d at %v for a close at %v", r, Dev.TimeOf(r), close)
	}
}

// TestFetcherVerifiesWhatRelaysSay: a relay that answers a forged or
// another round's signature is passed over for the next; a round before its
// time is not asked for; the dev chain is signed only where allowed.
func TestFetcherVerifiesWhatRelaysSay(t *testing.T) {
	good := quicknetRounds[2]
	forged := quicknetRounds[3].sig
	serve := func(sig string, round uint64) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/"+ChainHash+"/public/"+strconv.FormatUint(good.round, 10) {
				http.NotFound(w, r)
				return
			}
			fmt.Fprintf(w, `{"round":%d,"randomness":"00","signature":%q}`, round, sig)
		}))
	}
	liar, other, honest := serve(forged, good.round), serve(good.sig, good.round+1), serve(good.sig, good.round)
	defer liar.Close()
	defer other.Close()
	defer honest.Close()
	var refused []string
	f := &Fetcher{Relays: []string{liar.URL, other.URL, honest.URL}, Refused: func(relay string, err error) { refused = append(refused, relay) }}
	sig, err := f.Round(context.Background(), Quicknet, good.round)
	if err != nil || hex.EncodeToString(sig) != good.sig {
		t.Fatalf("Round: %x, %v", sig, err)
	}
	if len(refused) != 2 || refused[0] != liar.URL || refused[1] != other.URL {
		t.Fatalf("the two relays that lied before the honest one: %q", refused)
	}
	f.Relays = f.Relays[:2]
	_, err = f.Round(context.Background(), Quicknet, good.round)
	if !errors.Is(err, ErrSignature) || !strings.Contains(err.Error(), "answered round") {
		t.Fatalf("two lying relays: %v, want both named", err)
	}
	f.Now = func() time.Time { return Quicknet.TimeOf(good.round).Add(-time.Millisecond) }
	if _, err := f.Round(context.Background(), Quicknet, good.round); !errors.Is(err, ErrNotYet) {
		t.Fatalf("a round before its time: %v", err)
	}
	f.Now = nil
	if _, err := f.Round(context.Background(), Dev, 5); err == nil {
		t.Fatal("signed a dev round without Dev")
	}
	f.Dev = true
	if sig, err := f.Round(context.Background(), Dev, 5); err != nil || Dev.Verify(5, sig) != nil {
		t.Fatalf("a dev round: %v", err)
	}
	for _, bad := range []string{`{`, `{"round":1000,"signature":"zz"}`, `{"round":1000,"signature":"` + good.sig[:90] + `"}`} {
		if _, err := ParseRound([]byte(bad), Quicknet, 1000); err == nil {
			t.Errorf("ParseRound(%s) accepted", bad)
		}
	}
}
