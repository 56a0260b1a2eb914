package sharding

import "strconv"

// RoomEntrantsShards is the number of keys a sale's entrants (the users its
// draw ranks) are spread over: the start of a sale is its peak, and one key
// would put the whole crowd on one Redis core.
const RoomEntrantsShards = 16

// RoomStateKey returns the key of the admission state of a sale's waiting
// room or raffle (a hash: cursor, entrants counted, last advance, and the
// frozen draw's root, count and revealed seed). It shares its slot with
// RoomTailKey and RoomSeedKey.
func RoomStateKey(saleID int64) string { return roomTag(saleID) + ":state" }

// RoomTailKey returns the key of a waiting room's counter of late arrivals:
// each late arrival's INCR is its place after the entrants'.
func RoomTailKey(saleID int64) string { return roomTag(saleID) + ":tail" }

// RoomSeedKey returns the key of the secret seed of a sale's draw, written
// by `flashctl sale create` (its SHA-256 is the sale's Draw commitment) and
// copied into the state once the entrants are frozen.
func RoomSeedKey(saleID int64) string { return roomTag(saleID) + ":seed" }

// RoomHeadKeyKey returns the key of the secret Ed25519 key that signs a
// sale's tree head (package draw), written by `flashctl sale create`; its
// public half is in the sale's description. It is never revealed.
func RoomHeadKeyKey(saleID int64) string { return roomTag(saleID) + ":headkey" }

// RoomLogKey returns the key of a sale's draw log: a list of entries
// "<hash hex> <body>", appended by draw_log.lua (package draw's Log).
func RoomLogKey(saleID int64) string { return roomTag(saleID) + ":log" }

// RoomEntrantsKey returns the key of shard k of a sale's entrants: a hash of
// the users who entered before the entries closed, each with the nonce of
// their leaf (package draw).
func RoomEntrantsKey(saleID int64, k int) string {
	return "{room:" + strconv.FormatInt(saleID, 10) + ":" + strconv.Itoa(k) + "}:entrants"
}

// RoomEntrantsShard returns the shard of a sale's entrants that holds user.
func RoomEntrantsShard(userID uint64, saleID int64) int {
	return int(Mix64(userID+uint64(saleID)*0x2545f4914f6cdd1d) % RoomEntrantsShards)
}

// PresaleListKey returns the key of the set of user ids an operator loaded
// for a sale's presale (Presale.List).
func PresaleListKey(saleID int64) string { return presaleTag(saleID) + ":users" }

// PresaleCapKey returns the key of the units a sale's presale may still
// sell (Presale.Cap): set at creation, taken one per presale purchase.
func PresaleCapKey(saleID int64) string { return presaleTag(saleID) + ":cap" }

func presaleTag(saleID int64) string { return "{presale:" + strconv.FormatInt(saleID, 10) + "}" }

func roomTag(saleID int64) string { return "{room:" + strconv.FormatInt(saleID, 10) + "}" }
