// Package ops is the logic of flashctl, the operator's tool for a flash sale:
// a sale's life (sale create, list, show, pause, resume, end), its fair
// access (sale presale load, sale draw verify; see access.go), plan (shard
// count and placement from a target rate), preload (stock from PostgreSQL into
// Redis), status (per shard and per item, against PostgreSQL), reshard (change
// the shard count, before or during a sale), reconcile (compare Redis with
// PostgreSQL and repair by compare-and-set), sale report (the closing
// ledger) and toolbox (stay running as the
// ops pod that `kubectl exec` runs the others in, checking that Redis,
// PostgreSQL and Kafka answer with its settings).
//
// The commands are one table (commands.go): each row has a name, a summary,
// its required flags and a function that registers the command's flags and
// returns the function that runs it. The synopsis and `--help` of every
// command are generated from those flags (help.go). Every command is a method
// of Tool that returns a report value; the report renders itself as aligned
// tables for people or as JSON for scripts (--json). Main parses a command
// line and runs one command, so a test drives the whole tool without a process.
//
// The tree stays on package flag rather than alecthomas/kong: the global
// settings are sharding/config's (one naming rule for flags and environment,
// files for secrets, shared with the other binaries), which kong would
// define a second time in struct tags, and the help text the runbook quotes
// is the table's own; kong would save the table's forty lines of plumbing
// and cost both.
//
// The one import of writer code from sharding is writer/schema: the tables
// and the migrations belong to the writer, which owns PostgreSQL, and every
// command that writes or reads them does so through that package's
// functions (a leaf package that imports only sharding and sharding/sale);
// no SQL is written here. Everything else crosses the other way:
// the order event's wire format is sharding/orderevent, below both ends
// (TestShardingImportsNoWriterCode in package sharding keeps it so).
//
// Exit codes: 0 success (and, for reconcile, a clean sale); 1 the command ran
// and failed: drift or an audit failure found, a draw that does not verify,
// a refusal, an error; 2 bad command line, nothing done; 3 Redis or
// PostgreSQL could not be reached, nothing done.
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
//
// # Accounting
//
// For each item, with Q its quantity (PostgreSQL items.quantity), S the units
// on its Redis shards, P its PENDING and PAID orders in PostgreSQL, M the units
// journaled in moves between shards and H the units held by reservations that
// have not reached PostgreSQL yet (buyer records younger than the grace period
// whose order PostgreSQL does not know), a settled sale has
//
//	Q = S + P + M + H
//
// and drift is Q - (S + P + M + H). Reconcile explains drift by buyer records
// first (a buyer the failover lost, a reservation that never reached the
// writer, a buyer whose order PostgreSQL has already ended) and sets the rest
// with compare-and-set on one shard, never with a blind SET and never below 0.
// While a sale runs the numbers move under the tool; a repair re-reads and
// re-checks before every write, so it never overwrites a purchase it did not
// see.
//
// # The closing ledger
//
// `sale report` closes the books of a sale from durable sources only: per
// item, Q = paid + pending + unsold + in flight, with unsold the Redis stock
// of every shard and in flight the units in moves, the reservations on their
// way to PostgreSQL (the journal, or Kafka while the writers have lag) and
// the returns whose outbox row Redis has not applied yet; and the flows that
// explain it, read from PostgreSQL's orders and the history the writer keeps
// of every status change (order_history), and from the reshards flashctl
// recorded (sale_events). It reuses reconcile's check for Redis against
// PostgreSQL, adds what only the history can tell (an order row deleted, a
// status changed by hand), and either balances (exit 0) or lists every
// discrepancy with the order ids behind it (exit 1); it never repairs. The
// ledger part holds counts only and is hashed, so the same settled sale
// gives the same hash; timing and the gateways' funnel (counted answers,
// not exact) come beside it, outside the hash. LEDGER.md has the details.
package ops
