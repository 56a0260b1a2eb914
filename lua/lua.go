// Package lua holds the Redis Lua scripts of the flash sale, embedded into the
// binaries. Every script touches only keys that share one hash tag (see package
// sharding), validates all of its input before its first write, and answers a
// business outcome as a value, never as an error reply.
package lua

import _ "embed"

// orderLib is order.lua, the lazy order record's functions, which lua.go puts
// in front of every script that reads or changes an order.
//
//go:embed order.lua
var orderLib string

// The scripts that read or change an order, each with orderLib in front.
var (
	// Reserve takes one unit of an item on one shard for one user. See reserve.lua.
	Reserve = orderLib + reserveSrc
	// ReserveMany runs several reservations of reserve.lua on one slot in one
	// call. See reserve_many.lua.
	ReserveMany = orderLib + reserveManySrc
	// Release gives a reserved unit back at most once per order. See release.lua.
	Release = orderLib + releaseSrc
	// Status records an order status committed by the writer. See status.lua.
	Status = orderLib + statusSrc
	// Void undoes a purchase attempt whose answer never reached its client. See void.lua.
	Void = orderLib + voidSrc
	// Act journals an owner's pay or cancel request. See act.lua.
	Act = orderLib + actSrc
	// VoidAct undoes a pay or cancel attempt whose answer never reached its
	// client. See void_act.lua.
	VoidAct = orderLib + voidActSrc
	// ExpireClaim claims an unpaid order for expiry. See expire_claim.lua.
	ExpireClaim = orderLib + expireClaimSrc
	// Persisted marks order records of one shard as held by PostgreSQL. See persisted.lua.
	Persisted = orderLib + persistedSrc
	// OpenOrder makes an order's record from its buyer record, as the
	// scripts above do on the order's first change (tests and repairs that
	// write a record's fields directly): KEYS[1] the order record, KEYS[2]
	// the buyers hash, ARGV[1] the user id, ARGV[2] the order id. It replies
	// 1 when the record exists afterwards, else 0.
	OpenOrder = orderLib + "order_open(KEYS[1], KEYS[2], ARGV[1], ARGV[2])\nreturn redis.call('EXISTS', KEYS[1])\n"
)

//go:embed reserve.lua
var reserveSrc string

//go:embed release.lua
var releaseSrc string

//go:embed status.lua
var statusSrc string

// MoveOut debits a donor shard and journals the move. See move_out.lua.
//
//go:embed move_out.lua
var MoveOut string

// MoveIn credits a receiver shard once per move id. See move_in.lua.
//
//go:embed move_in.lua
var MoveIn string

// CAS sets a shard's stock only if it still holds the expected value. See cas.lua.
//
//go:embed cas.lua
var CAS string

//go:embed void.lua
var voidSrc string

//go:embed act.lua
var actSrc string

//go:embed void_act.lua
var voidActSrc string

//go:embed expire_claim.lua
var expireClaimSrc string

// Relay is one round of a shard's journal relay. See relay.lua.
//
//go:embed relay.lua
var Relay string

//go:embed persisted.lua
var persistedSrc string

// PersistedUpTo raises a shard's persisted watermarks. See persisted_upto.lua.
//
//go:embed persisted_upto.lua
var PersistedUpTo string

// DropBuyer removes a buyer record that still names one order. See drop_buyer.lua.
//
//go:embed drop_buyer.lua
var DropBuyer string

// RoomJoin enters a user into a draw once, with their nonce. See room_join.lua.
//
//go:embed room_join.lua
var RoomJoin string

// DrawLog appends an entry to a sale's draw log. See draw_log.lua.
//
//go:embed draw_log.lua
var DrawLog string

// RoomFreeze freezes a draw's entrants and then reveals its seed. See room_freeze.lua.
//
//go:embed room_freeze.lua
var RoomFreeze string

// RoomTick advances the admission of a waiting room or raffle and reads its
// state. See room_tick.lua.
//
//go:embed room_tick.lua
var RoomTick string

//go:embed reserve_many.lua
var reserveManySrc string

// Fence is a gateway's beat on a shard, which bounds what its relays may
// take. See fence.lua.
//
//go:embed fence.lua
var Fence string
