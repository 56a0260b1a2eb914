// Package reconcile is `flashctl reconcile`: it compares a sale in Redis with
// PostgreSQL (CheckSale, which the closing ledger reuses) and, asked to,
// repairs what it found by compare-and-set (Reconcile).
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
package reconcile
