package sharding

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
)

// SlotRange is an inclusive range of hash slots served by one master.
type SlotRange struct{ First, Last uint16 }

// Master is one cluster master and the slots it serves, as CLUSTER SLOTS tells.
type Master struct {
	Addr  string
	Slots []SlotRange
}

// Topology maps every slot to a master. Build it with NewTopology.
type Topology struct {
	Masters []Master // sorted by address
	owner   [SlotCount]int16
}

// NewTopology indexes masters by slot. Slots no master serves map to -1.
func NewTopology(masters []Master) (*Topology, error) {
	if len(masters) == 0 {
		return nil, errors.New("topology: no masters")
	}
	t := &Topology{Masters: append([]Master(nil), masters...)}
	sort.Slice(t.Masters, func(i, j int) bool { return t.Masters[i].Addr < t.Masters[j].Addr })
	for i := range t.owner {
		t.owner[i] = -1
	}
	for mi, m := range t.Masters {
		for _, r := range m.Slots {
			if r.First > r.Last || r.Last >= SlotCount {
				return nil, fmt.Errorf("topology: bad slot range %d-%d of %s", r.First, r.Last, m.Addr)
			}
			for s := int(r.First); s <= int(r.Last); s++ {
				t.owner[s] = int16(mi)
			}
		}
	}
	return t, nil
}

// Owner returns the index in Masters of the master serving slot, or -1.
func (t *Topology) Owner(slot uint16) int { return int(t.owner[slot&(SlotCount-1)]) }

// MasterOfTag returns the address of the master serving keys with tag.
func (t *Topology) MasterOfTag(tag string) string {
	o := t.Owner(Slot([]byte("{" + tag + "}")))
	if o < 0 {
		return "?"
	}
	return t.Masters[o].Addr
}

// PlaceTags picks one hash tag per shard so that shard i lands on master
// i mod M (M masters in address order): n shards spread as evenly as the masters
// allow. Tags read "s<sale>:<shard>:<salt>" with the smallest salt that lands on
// the wanted master, so the choice is deterministic for a topology.
func PlaceTags(saleID int64, n int, t *Topology) ([]string, error) {
	return PlaceTagsVersion(saleID, 0, n, t)
}

// PlaceTagsVersion is PlaceTags for the layout of a sale's given version: a
// reshard places its new shards under fresh tags "s<sale>v<version>:<shard>:<salt>"
// so that they never collide with the keys of the layout they replace.
func PlaceTagsVersion(saleID, version int64, n int, t *Topology) ([]string, error) {
	if n < 1 || n > MaxShards {
		return nil, fmt.Errorf("shard count %d: want 1..%d", n, MaxShards)
	}
	prefix := "s" + strconv.FormatInt(saleID, 10) + ":"
	if version > 0 {
		prefix = "s" + strconv.FormatInt(saleID, 10) + "v" + strconv.FormatInt(version, 10) + ":"
	}
	tags := make([]string, n)
	for i := range tags {
		want := i % len(t.Masters)
		for salt := 0; ; salt++ {
			if salt > 1<<20 {
				return nil, fmt.Errorf("no hash tag lands on master %s", t.Masters[want].Addr)
			}
			tag := prefix + strconv.Itoa(i) + ":" + strconv.Itoa(salt)
			if t.Owner(Slot([]byte(tag))) == want {
				tags[i] = tag
				break
			}
		}
	}
	return tags, nil
}

// UniformTags returns tags without a topology ("s<sale>:<shard>:0"), for tests
// and single-node setups; their spread over masters is left to the hash.
func UniformTags(saleID int64, n int) []string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = "s" + strconv.FormatInt(saleID, 10) + ":" + strconv.Itoa(i) + ":0"
	}
	return tags
}

// Split returns how q units spread over n shards: as even as possible, the first
// q%n shards one unit more.
func Split(q int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = q / int64(n)
		if int64(i) < q%int64(n) {
			out[i]++
		}
	}
	return out
}
