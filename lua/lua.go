// Package lua holds the Redis Lua scripts of the flash sale, embedded into the
// binaries. Every script touches only keys that share one hash tag (see package
// sharding), validates all of its input before its first write, and answers a
// business outcome as a value, never as an error reply.
package lua

import _ "embed"

// Reserve takes one unit of an item on one shard for one user. See reserve.lua.
//
//go:embed reserve.lua
var Reserve string

// Release gives a reserved unit back at most once per order. See release.lua.
//
//go:embed release.lua
var Release string

// Status records an order status committed by the writer. See status.lua.
//
//go:embed status.lua
var Status string

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

// Void undoes a purchase attempt whose answer never reached its client. See void.lua.
//
//go:embed void.lua
var Void string

// Act journals an owner's pay or cancel request. See act.lua.
//
//go:embed act.lua
var Act string

// VoidAct undoes a pay or cancel attempt whose answer never reached its
// client. See void_act.lua.
//
//go:embed void_act.lua
var VoidAct string

// ExpireClaim claims an unpaid order for expiry. See expire_claim.lua.
//
//go:embed expire_claim.lua
var ExpireClaim string

// Relay is one round of a shard's journal relay. See relay.lua.
//
//go:embed relay.lua
var Relay string

// Persisted marks order records of one shard as held by PostgreSQL. See persisted.lua.
//
//go:embed persisted.lua
var Persisted string

// DropBuyer removes a buyer record that still names one order. See drop_buyer.lua.
//
//go:embed drop_buyer.lua
var DropBuyer string

// RoomJoin puts a user into a waiting room's random draw once. See room_join.lua.
//
//go:embed room_join.lua
var RoomJoin string

// RoomTick advances a waiting room's admission and reads its state. See room_tick.lua.
//
//go:embed room_tick.lua
var RoomTick string

// ReserveMany runs several reservations of reserve.lua on one slot in one
// call. See reserve_many.lua.
//
//go:embed reserve_many.lua
var ReserveMany string

// Fence is a gateway's beat on a shard, which bounds what its relays may
// take. See fence.lua.
//
//go:embed fence.lua
var Fence string
