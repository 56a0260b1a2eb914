// Package sharding is the one place that knows where a sale's stock lives in the
// Redis Cluster.
//
// A sale's state is split over S shards (1..MaxShards). Shard i of a sale has
// one hash tag, sale.Sale.Shards[i] (package sharding/sale describes a sale), and
// every key of that shard carries it:
//
//	{tag}:stock:<itemId>      units of the item left on the shard (integer)
//	{tag}:buyers              hash user id -> order id of the users whose home is the shard
//	{tag}:o:<orderId>         hash of one order: user, item, status, created, expires
//	{tag}:journal             hash of unit moves in flight from or to the shard
//	{tag}:mv:<moveId>         present once the shard was credited by that move
//	{tag}:frozen              present while a reshard moves the shard away
//	{tag}:halt                PAUSED or ENDED while an operator halted the sale
//	{tag}:events              the hand-off journal: a stream of order events
//	{tag}:relay               lease of the shard's journal relay
//	{tag}:relay:mark          the relay's ownership mark, deleted only by a clean release
//	{tag}:taken               the relay's watermark: entries at or below it may be in Kafka
//	{tag}:chain               hash item id -> the item's last journal entry Kafka acknowledged
//	{tag}:pg                  hash item id -> the item's last entry PostgreSQL holds with all before it
//	{tag}:gws                 the fence marks: hash gateway id -> its last accepted beat
//
// so each Lua script, which touches the keys of one shard only, never crosses a
// slot. The keys of a whole sale carry no shard's tag (those of its waiting
// room or raffle, tagged room, and of its presale have tags of their own,
// one slot per script again):
//
//	fs:sales                  set of the ids of every sale
//	fs:sale:<id>              the sale's description (JSON), tags included
//	fs:relays:<id>            the sale's live journal relays (heartbeats)
//	fs:drift:<id>             the writer's last drift reading of the sale
//	fs:reshard:<id>           the sale's reshard journal, while one runs
//	{room:<id>}:state         the admission state of the waiting room or raffle
//	{room:<id>}:tail          the waiting room's counter of late arrivals
//	{room:<id>}:seed          the secret seed of the sale's draw (its SHA-256 is the commitment)
//	{room:<id>}:headkey       the secret key that signs the draw's tree head
//	{room:<id>}:log           the draw's hash-chained log (draw_log.lua)
//	{room:<id>:<k>}:entrants  shard k (of RoomEntrantsShards) of the sale's entrants
//	{presale:<id>}:users      the user ids loaded for the sale's presale
//	{presale:<id>}:cap        the units the presale may still sell
//
// Only this package builds these keys (SaleKey, AppendStockKey and the rest).
// Tags are picked at sale creation so that the shards spread evenly over the
// cluster's masters (PlaceTags), and are stored with the sale: gateways, the
// writer and the ops tool read them, never recompute them.
//
// A user's home shard is HomeShard(user, sale, S). The reserve script checks and
// writes the user's buyer record and takes the unit from the same shard in one
// atomic step, so one active order per user per sale holds across all items and
// shards: every purchase of one user in one sale runs on the one slot holding that
// user's buyer record, and Redis runs scripts on one slot one at a time.
//
// How the shards keep, move and read stock is told in stock/DESIGN.md, and
// the hand-off journal in journal/DESIGN.md.
package sharding
