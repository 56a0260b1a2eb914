package ops

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"flashsale/sharding"
	"flashsale/sharding/draw"
	"flashsale/sharding/draw/beacon"
	"flashsale/sharding/ops/internal/opstest"
	"flashsale/sharding/ops/saleops"
)

// TestDrawBeaconAndAbortOnTheStack: `sale create --beacon dev` seals a
// queue's draw (round, head key, the log's commitment entry); `sale draw
// beacon` refuses a forged round and records nothing, records a real one
// for the gateways, and keeps the first; `sale draw abort` logs its reason,
// and the log still checks; a sale created with --beacon none has no round
// to hand.
func TestDrawBeaconAndAbortOnTheStack(t *testing.T) {
	e := opstest.NewEnv(t)
	ctx := context.Background()
	id := opstest.RandomSaleID()
	sid := strconv.FormatInt(id, 10)
	t.Cleanup(func() { dropAccess(e, id) })
	code, out, errOut := runMain("--json", "sale", "create", "--file", writeQueuePresale(t, id), "--shards", "2", "--beacon", "dev")
	var created saleops.SaleCreated
	if err := json.Unmarshal([]byte(out), &created); code != ExitOK || err != nil || created.Beacon == nil || created.Beacon.Chain != "dev" || created.HeadKey == "" {
		t.Fatalf("create --beacon dev: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	log, err := e.T.Store.DrawLog(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	st, err := draw.CheckLog(id, log)
	if err != nil || len(log) != 1 || st.Commit.Round != created.Beacon.Round || st.Commit.HeadKey != created.HeadKey || st.Commit.Commitment != created.Commitment {
		t.Fatalf("the log after create: %d entries, %+v, %v", len(log), st, err)
	}
	r := created.Beacon.Round
	forged, _ := beacon.Dev.Sign(r + 1)
	if code, _, errOut := runMain("sale", "draw", "beacon", "--sale", sid, "--signature", hex.EncodeToString(forged)); code != ExitFail ||
		!strings.Contains(errOut, "not the chain's for this round") || !strings.Contains(errOut, "nothing recorded") {
		t.Fatalf("a forged round: exit %d, %q", code, errOut)
	}
	if n, err := e.C.Do(ctx, e.C.B().Hexists().Key(sharding.RoomStateKey(id)).Field("beacon").Build()).AsInt64(); err != nil || n != 0 {
		t.Fatalf("a forged round was recorded (%d, %v)", n, err)
	}
	real, _ := beacon.Dev.Sign(r)
	code, out, errOut = runMain("sale", "draw", "beacon", "--sale", sid, "--signature", hex.EncodeToString(real))
	if code != ExitOK || !strings.Contains(out, "verified and recorded") {
		t.Fatalf("the real round: exit %d\n%s%s", code, out, errOut)
	}
	held, err := e.C.Do(ctx, e.C.B().Hget().Key(sharding.RoomStateKey(id)).Field("beacon").Build()).ToString()
	if err != nil || held != hex.EncodeToString(real) {
		t.Fatalf("recorded %q, %v", held, err)
	}
	code, out, _ = runMain("sale", "draw", "beacon", "--sale", sid, "--signature", hex.EncodeToString(real))
	if code != ExitOK || !strings.Contains(out, "verified and recorded") {
		t.Fatalf("the same round again: exit %d\n%s", code, out)
	}
	if code, _, errOut := runMain("sale", "draw", "abort", "--sale", sid, "--reason", " "); code != ExitUsage || !strings.Contains(errOut, "--reason") {
		t.Fatalf("an abort without a reason: exit %d, %q", code, errOut)
	}
	code, out, errOut = runMain("sale", "draw", "abort", "--sale", sid, "--reason", "the seed leaked")
	if code != ExitOK || !strings.Contains(out, "entry 2 of its log") {
		t.Fatalf("abort: exit %d\n%s%s", code, out, errOut)
	}
	log, _ = e.T.Store.DrawLog(ctx, id)
	if st, err := draw.CheckLog(id, log); err != nil || len(st.Aborts) != 1 || st.Aborts[0] != "the seed leaked" {
		t.Fatalf("the log after the abort: %+v, %v", st, err)
	}
	bare := opstest.RandomSaleID()
	t.Cleanup(func() { dropAccess(e, bare) })
	if code, out, errOut := runMain("sale", "create", "--file", writeQueuePresale(t, bare), "--shards", "2", "--beacon", "none"); code != ExitOK {
		t.Fatalf("create --beacon none: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runMain("sale", "draw", "beacon", "--sale", strconv.FormatInt(bare, 10), "--signature", hex.EncodeToString(real)); code != ExitFail ||
		!strings.Contains(errOut, "not sealed by a beacon round") {
		t.Fatalf("a sale without a round: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runMain("sale", "create", "--file", writeQueuePresale(t, opstest.RandomSaleID()), "--beacon", "moon"); code != ExitUsage ||
		!strings.Contains(errOut, `no chain "moon"`) {
		t.Fatalf("--beacon moon: exit %d, %q", code, errOut)
	}
}
