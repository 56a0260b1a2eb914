// Package saleops is a sale's life as flashctl runs it: `sale create` (a
// sale file read and checked, its rows in PostgreSQL, its stock in Redis,
// the seed of its draw), `sale brand`, `sale list`, `sale show`, `sale
// pause|resume|end` and `sale presale load`. The sale file's format is told
// in salefile.go; the model and its validation are package sharding/sale's.
//
// # Fair access
//
// A sale's fair access (SPEC "Fair access") as `sale create` sets it up and
// `sale show` shows it. For a queue or raffle sale, create draws the secret
// seed of the verifiable draw itself and publishes only its commitment (the
// sale description's Draw): nobody types a seed in, so nobody chose it. The
// seed is written to Redis (sharding.RoomSeedKey) before the description,
// and the commitment is always to what that key holds, because the freeze
// reveals the key, not the tool's memory of it.
//
// # The kill switch
//
// `sale pause` writes a halt key on every shard of the sale, which the reserve
// script checks in the same atomic step that would take a unit, then stores
// the sale's description with state PAUSED: from the moment the command
// returns no shard reserves anything (503 SALE_PAUSED from the gateway that
// asked), and every gateway's catalog shows PAUSED within its 1 s refresh and
// then answers without a Redis call. `resume` removes the keys, `end` writes
// ENDED for good (410 SALE_ENDED). Pay, cancel and expiry go on.
package saleops
