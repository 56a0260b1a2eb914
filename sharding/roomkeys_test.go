package sharding

import "testing"

func TestRoomKeys(t *testing.T) {
	if Slot([]byte(RoomStateKey(7))) != Slot([]byte(RoomTailKey(7))) {
		t.Fatal("state and tail must share a slot (room_tick.lua reads both)")
	}
	slots := map[uint16]bool{}
	for k := 0; k < RoomLotteryShards; k++ {
		slots[Slot([]byte(RoomLotteryKey(7, k)))] = true
	}
	if len(slots) != RoomLotteryShards {
		t.Fatalf("%d draw shards on %d slots", RoomLotteryShards, len(slots))
	}
	hits := make([]int, RoomLotteryShards)
	for u := uint64(1); u <= 16000; u++ {
		hits[RoomLotteryShard(u, 7)]++
	}
	for k, n := range hits {
		if n < 800 || n > 1200 {
			t.Fatalf("shard %d holds %d of 16000 users", k, n)
		}
	}
}
