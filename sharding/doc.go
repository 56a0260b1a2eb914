// Package sharding is the one place that knows where a sale's stock lives in the
// Redis Cluster.
//
// A sale's state is split over S shards (1..MaxShards). Shard i of a sale has
// one hash tag, Sale.Shards[i], and every key of that shard carries it:
//
//	{tag}:stock:<itemId>    units of the item left on the shard (integer)
//	{tag}:buyers            hash user id -> order id of the users whose home is the shard
//	{tag}:o:<orderId>       hash of one order: user, item, status, created, expires
//	{tag}:journal           hash of unit moves in flight from or to the shard
//	{tag}:frozen            present while a reshard moves the shard away
//	{tag}:halt              PAUSED or ENDED while an operator halted the sale
//
// so each Lua script, which touches the keys of one shard only, never crosses a
// slot. Tags are picked at sale creation so that the shards spread evenly over
// the cluster's masters (PlaceTags), and are stored with the sale: gateways,
// the writer and the ops tool read them, never recompute them.
//
// A user's home shard is HomeShard(user, sale, S). The reserve script checks and
// writes the user's buyer record and takes the unit from the same shard in one
// atomic step, so one active order per user per sale holds across all items and
// shards: every purchase of one user in one sale runs on the one slot holding that
// user's buyer record, and Redis runs scripts on one slot one at a time.
//
// Sale descriptions live under SaleKey(id) as JSON, and the set of sale ids
// under SalesKey.
package sharding
