// Package sale is the description of a flash sale: the model a sale file is
// read into, that `flashctl sale create` writes to PostgreSQL and, as JSON, to
// Redis under sharding.SaleKey, and that gateways, writers and the ops tool
// read back. It owns the fields and their JSON names (sale.go: the sale, its
// items, its payment window and the operator's state; brand.go: how the sale
// page looks; access.go: fair access, its modes, raffle window, presale and
// draw commitment; room.go: the waiting room's settings) and Validate, which
// refuses a bad description with the field named as the sale file spells it.
//
// Where the sale's stock lives is package sharding's: its keys, hash tags,
// placement and slots. This package imports sharding for two bounds only
// (MaxSaleID, which order ids carry, and MaxShards); sharding imports nothing
// of it.
//
// # Words of fair access
//
// One word per idea, as SPEC's "The front door" and "Fair access" use them,
// in code, comments, logs, metrics, flashctl and the sale page; a test
// (TestOneWordPerIdea) keeps the retired words out of the repository.
//
//   - access mode: how a sale hands out tickets, open, queue or raffle
//     (Mode; the sale file's "access"). Not "access" alone.
//   - open: the access mode without a waiting room or draw: tickets from
//     the start, to whoever asks.
//   - waiting room: the access mode queue: the pre-queue and the start
//     window are entries ordered by the draw, later arrivals join the end,
//     and places are admitted as the stock allows (Room). Not bare "room"
//     in prose: that word names code only (package gateway/internal/room
//     and the {room:...} keys, which run a waiting room or a raffle).
//   - raffle: the access mode with a registration window that closes
//     before the start; the draw orders its entrants. Not "lottery", not
//     "draw" for the mode.
//   - registration window: a raffle's entriesOpen to entriesClose (Raffle).
//     Entries open and close; "the draw closes" is wrong: entries do.
//   - entrant, entry: a user who entered while the entries were open (a
//     raffle's registration window, or a queue's pre-queue and start
//     window), and what they entered: their leaf. Not "participant",
//     "ticket holder" or "player".
//   - drawn sale: one in access mode queue or raffle (Drawn): both order
//     their entrants by the draw.
//   - the draw: what ranks the entrants, verifiably (package draw: the
//     commitment, the freeze, the beacon, the reveal); "a draw" is also
//     one entrant's keyed hash in it. Only the draw itself: not the mode,
//     not the entries, not their count.
//   - sealed: a draw whose key mixes a beacon round with the seed (the
//     sale's draw names a chain and a round); a sale created before is
//     drawn on its seed alone, "unsealed".
//   - beacon round: round R of a pinned public beacon (drand's quicknet;
//     the local stack's dev chain), fixed at the sale's creation, whose
//     randomness nobody knows before its time. Not "random number" or
//     "oracle".
//   - tree head: the signed (sale, count, root, freeze time, chain, round)
//     an entrant receives at the freeze, before R exists, and keeps; the
//     sale page says "the signed record of the entries" to buyers. Not
//     "receipt" or "certificate".
//   - the draw's log: the hash-chained record of the draw's steps
//     (commitment, freeze, beacon, reveal, abort). Not "audit trail".
//   - place: an entrant's rank in the draw, 1-based (a late arrival's is
//     after every entrant's). Not "position": a position is the places
//     still ahead plus one, as a 202 QUEUED says it.
//   - admitted: a place the cursor reached, handed a ticket. In a raffle
//     the first places, one per unit, are "selected" (they will be
//     admitted) and the others are told NOT_SELECTED. Not "winner": a
//     winner is a buyer whose purchase was answered 202.
//   - presale: a phase before the general sale (Presale), not an access
//     mode.
//   - the front door: SPEC's name for the sale page, the hidden purchase
//     URL (the ticket) and the waiting room together; code keeps it in
//     names that mean exactly that (frontdoor.go, FrontDoor). Not a word
//     for fair access alone.
package sale
