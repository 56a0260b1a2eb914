package stock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/stock"
)

// Two attempts of one Idempotency-Key in flight at once (a hedged client,
// a second tap after a dropped connection, a load balancer's retry), each
// answered RESERVED, and one of the two replies lost: the gateway voids the
// attempt whose reply it lost before answering it 503, and the order must
// stand for the attempt whose client was told 202. An outside review found
// two ways to lose it (issue 55, defect 2), through both scripts: (a) a
// replay older than the order's holder took nothing over yet was answered
// RESERVED (202), and the holder's void then undid the order; (b) a newer
// replay took the order over, and its void undid the order the first attempt
// was already told 202 for. The order now keeps every attempt that may have
// been told 202, and a void undoes it only when it lets go of the last.
func TestOverlappingAttemptsKeepAnAnsweredOrder(t *testing.T) {
	s, c := newStore(t)
	ctx := context.Background()
	for _, via := range []string{"reserve.lua", "reserve_many.lua"} {
		for _, opened := range []bool{false, true} {
			for _, kase := range []string{"a: an older replay answered, the holder voided", "b: a newer replay voided, the holder answered"} {
				name := via + ", record opened " + map[bool]string{false: "no", true: "yes"}[opened] + ", " + kase
				sale, tag := stockedShard(t, c, 3)
				id := sharding.NewOrderID(sale, 9, 9)
				older, newer := reservation(tag, 1, 42, id), reservation(tag, 1, 42, id)
				older.Created = newer.Created.Add(-100 * time.Millisecond) // sent first, by another gateway
				fresh, replay, voided := newer, older, newer               // (a)
				if strings.HasPrefix(kase, "b") {
					fresh, replay, voided = older, newer, newer
				}
				if res, err := s.Reserve(ctx, fresh); err != nil || res.Outcome != stock.Reserved || res.Replay {
					t.Fatalf("%s: the fresh attempt: %+v %v", name, res, err)
				}
				if opened {
					// The order's first change opened its record (a
					// persisted mark, a status from the writer).
					if _, err := s.MarkPersisted(ctx, tag, 42, id); err != nil {
						t.Fatal(err)
					}
				}
				if via == "reserve.lua" {
					if res, err := s.Reserve(ctx, replay); err != nil || res.Outcome != stock.Reserved || !res.Replay {
						t.Fatalf("%s: the replay: %+v %v", name, res, err)
					}
				} else if reply := reserveMany(t, c, replay); !strings.HasPrefix(reply, "1 ") {
					t.Fatalf("%s: the replay: %s", name, reply)
				}
				// Both were answered RESERVED; one reply was lost.
				if out, err := s.Void(ctx, voided); err != nil || out != stock.VoidNothing {
					t.Fatalf("%s: the void of the attempt whose reply was lost: %v %v, want nothing undone", name, out, err)
				}
				if rec, found, err := s.Order(ctx, tag, 42, id); err != nil || !found || rec.Status != stock.StatusPending {
					t.Fatalf("%s: the order told 202 after the void: %+v %v %v", name, rec, found, err)
				}
				if held, found, _ := s.Holder(ctx, tag, 42); !found || held != id {
					t.Fatalf("%s: the buyer record after the void: %v %v", name, held, found)
				}
				if n := getInt(t, c, sharding.AppendStockKey(nil, tag, 1)); n != 2 {
					t.Fatalf("%s: stock %d, want 2", name, n)
				}
				// Had the answered attempt's reply been lost too, its void
				// (the last holder's) undoes the order.
				answered := fresh
				if answered == voided {
					answered = replay
				}
				if out, err := s.Void(ctx, answered); err != nil || out != stock.Voided {
					t.Fatalf("%s: the last holder's void: %v %v, want voided", name, out, err)
				}
				if n := getInt(t, c, sharding.AppendStockKey(nil, tag, 1)); n != 3 {
					t.Fatalf("%s: stock %d after both voids, want 3", name, n)
				}
			}
		}
	}
}
