package sharding

import "strconv"

// RoomLotteryShards is the number of keys the entrants of a room's draw are
// spread over: the start of a sale is its peak, and one key would put the
// whole crowd on one Redis core.
const RoomLotteryShards = 16

// RoomStateKey returns the key of a room's admission state (a hash: cursor,
// draw size, last advance, and the frozen draw's root, count and revealed
// seed). It shares its slot with RoomTailKey and RoomSeedKey.
func RoomStateKey(saleID int64) string { return roomTag(saleID) + ":state" }

// RoomTailKey returns the key of a room's counter of late arrivals: each
// late arrival's INCR is its place after the draw.
func RoomTailKey(saleID int64) string { return roomTag(saleID) + ":tail" }

// RoomSeedKey returns the key of the secret seed of a sale's draw, written
// by `flashctl sale create` (its SHA-256 is the sale's Draw commitment) and
// copied into the state once the entrants are frozen.
func RoomSeedKey(saleID int64) string { return roomTag(saleID) + ":seed" }

// RoomLotteryKey returns the key of shard k of a room's draw: a hash of the
// users who entered before the draw closed, each with the nonce of their
// leaf (package draw).
func RoomLotteryKey(saleID int64, k int) string {
	return "{room:" + strconv.FormatInt(saleID, 10) + ":" + strconv.Itoa(k) + "}:entrants"
}

// RoomLotteryShard returns the shard of a room's draw that holds user.
func RoomLotteryShard(userID uint64, saleID int64) int {
	return int(Mix64(userID+uint64(saleID)*0x2545f4914f6cdd1d) % RoomLotteryShards)
}

// PresaleListKey returns the key of the set of user ids an operator loaded
// for a sale's presale (Presale.List).
func PresaleListKey(saleID int64) string { return presaleTag(saleID) + ":users" }

// PresaleCapKey returns the key of the units a sale's presale may still
// sell (Presale.Cap): set at creation, taken one per presale purchase.
func PresaleCapKey(saleID int64) string { return presaleTag(saleID) + ":cap" }

func presaleTag(saleID int64) string { return "{presale:" + strconv.FormatInt(saleID, 10) + "}" }

func roomTag(saleID int64) string { return "{room:" + strconv.FormatInt(saleID, 10) + "}" }
