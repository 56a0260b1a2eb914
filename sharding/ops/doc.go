// Package ops is the logic of flashctl, the operator's tool for a flash sale's
// stock in the Redis Cluster: plan (shard count and placement from a target
// rate), preload (stock from PostgreSQL into Redis), status (per shard and per
// item, against PostgreSQL), reshard (change the shard count, before or during
// a sale) and reconcile (compare Redis with PostgreSQL and repair by
// compare-and-set).
//
// Every subcommand is a method of Tool that returns a report value; the report
// renders itself as aligned tables for people or as JSON for scripts. Main
// parses a command line into a Config and runs one subcommand, so a test drives
// the whole tool without a process.
//
// Exit codes: 0 success (and, for reconcile, a clean sale), 1 a runtime failure
// or drift found, 2 bad usage.
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
package ops
