package sharding

import (
	"strconv"
)

// MaxShards is the largest shard count a sale may have.
const MaxShards = 256

// SalesKey is the Redis set of the ids of all sales.
const SalesKey = "fs:sales"

// RelaysKey returns the key of the Redis sorted set of the live journal
// relays of a sale: token -> the last time (unix ms) the relay said it was
// alive. The relays of a sale share its shards by it.
func RelaysKey(saleID int64) string { return "fs:relays:" + strconv.FormatInt(saleID, 10) }

// SaleKey returns the Redis key of a sale's JSON description.
func SaleKey(saleID int64) string { return "fs:sale:" + strconv.FormatInt(saleID, 10) }

// DriftKey returns the Redis key of the writer's last drift reading of a
// sale (a hash: "at" -> unix ms of the reading, item id -> its drift), which
// the gateways export: they cannot see PostgreSQL.
func DriftKey(saleID int64) string { return "fs:drift:" + strconv.FormatInt(saleID, 10) }

// ReshardKey returns the Redis key of a sale's reshard journal: present from the
// moment a reshard freezes the old shards until their keys are cleaned up.
func ReshardKey(saleID int64) string { return "fs:reshard:" + strconv.FormatInt(saleID, 10) }

// AppendOrderPattern appends the SCAN pattern matching every order record on
// the shard with tag.
func AppendOrderPattern(dst []byte, tag string) []byte {
	dst = appendTag(dst, tag)
	return append(dst, ":o:*"...)
}

// AppendStockKey appends the key of an item's stock on the shard with tag.
func AppendStockKey(dst []byte, tag string, itemID int64) []byte {
	dst = appendTag(dst, tag)
	dst = append(dst, ":stock:"...)
	return strconv.AppendInt(dst, itemID, 10)
}

// AppendBuyersKey appends the key of the buyers hash of the shard with tag.
func AppendBuyersKey(dst []byte, tag string) []byte {
	dst = appendTag(dst, tag)
	return append(dst, ":buyers"...)
}

// AppendOrderKey appends the key of an order record kept on the shard with tag.
func AppendOrderKey(dst []byte, tag string, id OrderID) []byte {
	dst = appendTag(dst, tag)
	dst = append(dst, ":o:"...)
	return id.AppendText(dst)
}

// AppendFenceKey appends the key whose presence freezes the shard with tag: every
// script refuses to change a frozen shard (a reshard is moving it).
func AppendFenceKey(dst []byte, tag string) []byte {
	dst = appendTag(dst, tag)
	return append(dst, ":frozen"...)
}

// AppendHaltKey appends the key that halts purchases on the shard with tag:
// present ("PAUSED" or "ENDED", sale.StatePaused or StateEnded) while an
// operator paused the sale or ended it early. The reserve script refuses a new
// reservation on a halted shard; pay, cancel, expiry and releases go on.
func AppendHaltKey(dst []byte, tag string) []byte {
	dst = appendTag(dst, tag)
	return append(dst, ":halt"...)
}

// AppendMoveKey appends the key marking that the shard with tag was credited by
// move id (see package stock).
func AppendMoveKey(dst []byte, tag, moveID string) []byte {
	dst = appendTag(dst, tag)
	dst = append(dst, ":mv:"...)
	return append(dst, moveID...)
}

// AppendJournalKey appends the key of the stock-move journal of the shard with tag.
func AppendJournalKey(dst []byte, tag string) []byte {
	dst = appendTag(dst, tag)
	return append(dst, ":journal"...)
}

// AppendEventsKey appends the key of the hand-off journal of the shard with
// tag: a stream of order events (reserved, pay, cancel) written by the same
// scripts that change the shard, which the relay moves to Kafka.
func AppendEventsKey(dst []byte, tag string) []byte {
	dst = appendTag(dst, tag)
	return append(dst, ":events"...)
}

// AppendRelayLeaseKey appends the key of the lease on the relay of the shard
// with tag: the token of the one relay that moves its journal.
func AppendRelayLeaseKey(dst []byte, tag string) []byte {
	dst = appendTag(dst, tag)
	return append(dst, ":relay"...)
}

// AppendRelayMarkKey appends the key of the shard's ownership mark: set (no
// TTL) by the relay that takes the lease, deleted with the lease by a clean
// release. A lease taken while the mark is there was lost, not released.
func AppendRelayMarkKey(dst []byte, tag string) []byte {
	dst = appendTag(dst, tag)
	return append(dst, ":relay:mark"...)
}

// AppendTakenKey appends the key holding the shard's relay watermark: the
// highest journal entry id a relay may have taken on the shard with tag
// (relay.lua raises it to each round's cutoff); entries at or below it can
// no longer be voided.
func AppendTakenKey(dst []byte, tag string) []byte {
	dst = appendTag(dst, tag)
	return append(dst, ":taken"...)
}

// AppendChainKey appends the key of the shard's item chains: a hash of item
// id -> the last journal entry of the item that Kafka acknowledged, which
// relay.lua records with the trim. The relay names every record's
// predecessor of its item from it (orderevent.Position.Prev).
func AppendChainKey(dst []byte, tag string) []byte {
	dst = appendTag(dst, tag)
	return append(dst, ":chain"...)
}

// AppendPersistedKey appends the key of the shard's persisted watermarks: a
// hash of item id -> the highest journal entry id of the item whose event
// PostgreSQL holds, with every earlier entry of the item (the writer raises
// it: lua/persisted_upto.lua). An order whose reservation entry is at or
// below its item's watermark is persisted.
func AppendPersistedKey(dst []byte, tag string) []byte {
	dst = appendTag(dst, tag)
	return append(dst, ":pg"...)
}

// AppendFenceMarksKey appends the key of the shard's fence marks: a hash of
// gateway id -> the last time (unix ms, the master's clock) the gateway
// beat on the shard with no void of it left to land (fence.lua); a relay
// takes no entry newer than the oldest live mark less its hold
// (relay.lua).
func AppendFenceMarksKey(dst []byte, tag string) []byte {
	dst = appendTag(dst, tag)
	return append(dst, ":gws"...)
}

// AppendNoMoveKey appends the placeholder receiver-marker key that a
// reservation without a borrowed credit names (reserve.lua never touches it).
func AppendNoMoveKey(dst []byte, tag string) []byte {
	return AppendMoveKey(dst, tag, "-")
}

func appendTag(dst []byte, tag string) []byte {
	dst = append(dst, '{')
	dst = append(dst, tag...)
	return append(dst, '}')
}

// HomeShard returns the shard, in [0, shards), that holds user's buyer record in
// a sale. It is a pure function of its arguments, so every gateway agrees.
func HomeShard(userID uint64, saleID int64, shards int) int {
	if shards <= 1 {
		return 0
	}
	return int(Mix64(userID^uint64(saleID)*0x9e3779b97f4a7c15) % uint64(shards))
}

// Mix64 is splitmix64's finaliser, a bijection of 64-bit values: consecutive
// user ids land on unrelated shards, distinct counters give distinct ids.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
