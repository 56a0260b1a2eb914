package journal_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"flashsale/lua"
	"flashsale/sharding"
	"flashsale/sharding/journal"
	"flashsale/sharding/stock"
)

// One relay.lua round against the real cluster: it closes to voids exactly
// the entries older than the hold (raising the watermark to the cutoff's
// millisecond), the relay's own XRANGE up to that id reads them, a watermark
// a clock jump left ahead is never lowered, and another relay's lease
// yields nothing.
//
// It runs on a Redis of its own: on the shared stack the gateways of tests
// running beside it beat every live shard, this one's too, and a mark older
// than its second entry holds the no-hold round back (seen under go test -p 6).
func TestRelayRoundClosesWhatItTakes(t *testing.T) {
	e := loneSetup(t)
	ctx := context.Background()
	c := e.st.Client()
	tag := e.sale.Shards[0]
	events, lease, taken := string(sharding.AppendEventsKey(nil, tag)), string(sharding.AppendRelayLeaseKey(nil, tag)), string(sharding.AppendTakenKey(nil, tag))
	mark := string(sharding.AppendRelayMarkKey(nil, tag))
	keys := []string{events, lease, taken, mark, string(sharding.AppendFenceMarksKey(nil, tag)), string(sharding.AppendFenceKey(nil, tag)),
		string(sharding.AppendChainKey(nil, tag))}
	script := rueidis.NewLuaScript(lua.Relay)
	round := func(token string, hold time.Duration) journal.Round {
		t.Helper()
		arr, err := script.Exec(ctx, c, keys, []string{token, "5000", itoa(hold.Milliseconds()), "30000"}).ToArray()
		if err != nil {
			t.Fatal(err)
		}
		rd, err := journal.ParseRound(arr)
		if err != nil {
			t.Fatal(err)
		}
		return rd
	}
	a, b := e.reserve(t, 1), e.reserve(t, 2)

	rd := round("me", time.Minute)
	if !rd.Owner || rd.Backlog != 2 || rd.Oldest == "" || rd.Upto != "" {
		t.Fatalf("round with a hold of a minute: %+v, want the lease, 2 entries and nothing to take", rd)
	}
	if out, err := e.st.Void(ctx, a); err != nil || out != stock.Voided {
		t.Fatalf("void within the hold: %v %v, want voided", out, err)
	}

	before := time.Now().UnixMilli()
	rd = round("me", 0)
	ms, seq, _ := strings.Cut(rd.Upto, "-")
	if cut, err := strconv.ParseInt(ms, 10, 64); err != nil || rd.Backlog != 1 || seq != "18446744073709551615" || cut < before {
		t.Fatalf("round with no hold: %+v, want 1 entry and the cutoff's last id", rd)
	}
	if w, _ := c.Do(ctx, c.B().Get().Key(taken).Build()).ToString(); w != rd.Upto {
		t.Fatalf("watermark %q, want %q", w, rd.Upto)
	}
	if out, err := e.st.Void(ctx, b); err != nil || out != stock.VoidStands {
		t.Fatalf("void of a closed entry: %v %v, want stands", out, err)
	}
	arr, err := c.Do(ctx, c.B().Xrange().Key(events).Start("-").End(rd.Upto).Build()).ToArray()
	if err != nil {
		t.Fatal(err)
	}
	es, err := journal.ParseEntries(arr)
	if err != nil || len(es) != 1 || es[0].Fields["o"] != b.OrderID.String() {
		t.Fatalf("read up to %s: %+v %v, want the kept order's entry", rd.Upto, es, err)
	}

	ahead := "99999999999999-0"
	if err := c.Do(ctx, c.B().Set().Key(taken).Value(ahead).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if rd = round("me", 0); rd.Upto != ahead {
		t.Fatalf("round under a watermark ahead of the clock: upto %q, want %q kept", rd.Upto, ahead)
	}
	if rd = round("someone else", 0); rd.Owner || rd.Entries != nil {
		t.Fatalf("round under another relay's lease: %+v, want nothing", rd)
	}

	// A lease that expired (its owner died) leaves the mark: the next owner's
	// first round closes nothing and says the lease was lost; its next
	// rounds close as usual. A clean release takes the mark with the lease,
	// and the next owner closes at once.
	if err := c.Do(ctx, c.B().Del().Key(lease).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, c.B().Del().Key(taken).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if rd = round("heir", 0); !rd.Owner || !rd.Lost || rd.Upto != "" || rd.Backlog != 1 {
		t.Fatalf("round taking over an expired lease: %+v, want the lease, lost and nothing closed", rd)
	}
	if rd = round("heir", 0); rd.Lost || rd.Upto == "" {
		t.Fatalf("the heir's next round: %+v, want entries closed", rd)
	}
	if err := script.Exec(ctx, c, keys, []string{"heir", "0", "0", "1"}).Error(); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Do(ctx, c.B().Exists().Key(lease, mark).Build()).AsInt64(); n != 0 {
		t.Fatalf("%d of the lease and the mark left after a clean release", n)
	}
	if rd = round("next", 0); !rd.Owner || rd.Lost || rd.Upto == "" {
		t.Fatalf("round after a clean release: %+v, want entries closed at once", rd)
	}
}

// The round's reply and the entries come from Redis, another process: a reply
// of the wrong shape is an error naming it, never a round to act on.
func TestRelayRoundRefusesMalformedReplies(t *testing.T) {
	e := setup(t, 1)
	ctx := context.Background()
	c := e.st.Client()
	eval := func(body string) []rueidis.RedisMessage {
		t.Helper()
		arr, err := c.Do(ctx, c.B().Eval().Script(body).Numkeys(0).Build()).ToArray()
		if err != nil {
			t.Fatal(err)
		}
		return arr
	}
	for _, tc := range []struct{ reply, want string }{
		{"return {7}", "unknown code 7"},
		{"return {1, 3, ''}", "reply of 3 elements"},
		{"return {1, 3, '', ''}", "reply of 4 elements"},
		{"return {1, -1, '', '', 0}", "backlog"},
		{"return {1, 'x', '', '', 0}", "backlog"},
		{"return {1, 0, '', 'not-an-id', 0}", "not an entry id"},
		{"return {1, 0, '', '', 2}", "lost flag"},
		{"return {1, 0, '', '', 'x'}", "lost flag"},
		{"return {'one', 0, '', '', 0}", "relay round"},
	} {
		if _, err := journal.ParseRound(eval(tc.reply)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.reply, err, tc.want)
		}
	}
	if rd, err := journal.ParseRound(eval("return {1, 4, '1-0', '9-18446744073709551615', 1}")); err != nil || rd.Backlog != 4 || rd.Upto != "9-18446744073709551615" || !rd.Lost {
		t.Errorf("a good reply: %+v %v", rd, err)
	}
	for _, body := range []string{"return {{'1-0'}}", "return {{'1-0', {'t'}}}", "return {'1-0'}", "return {{{'x'}, {'t', 'pay'}}}"} {
		if _, err := journal.ParseEntries(eval(body)); err == nil || !strings.Contains(err.Error(), "malformed entry") {
			t.Errorf("%s: %v, want a malformed entry", body, err)
		}
	}
	es, err := journal.ParseEntries(eval("return {{'1-0', {'t', 'pay', 'o', 'x'}}}"))
	if err != nil || len(es) != 1 || es[0].ID != "1-0" || es[0].Fields["t"] != "pay" || es[0].Fields["o"] != "x" {
		t.Errorf("a good entry: %+v %v", es, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
