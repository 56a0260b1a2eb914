package sharding

import "testing"

func TestRoomKeys(t *testing.T) {
	if Slot([]byte(RoomStateKey(7))) != Slot([]byte(RoomTailKey(7))) {
		t.Fatal("state and tail must share a slot (room_tick.lua reads both)")
	}
	slots := map[uint16]bool{}
	for k := 0; k < RoomEntrantsShards; k++ {
		slots[Slot([]byte(RoomEntrantsKey(7, k)))] = true
	}
	if len(slots) != RoomEntrantsShards {
		t.Fatalf("%d entrants shards on %d slots", RoomEntrantsShards, len(slots))
	}
	hits := make([]int, RoomEntrantsShards)
	for u := uint64(1); u <= 16000; u++ {
		hits[RoomEntrantsShard(u, 7)]++
	}
	for k, n := range hits {
		if n < 800 || n > 1200 {
			t.Fatalf("shard %d holds %d of 16000 users", k, n)
		}
	}
}
