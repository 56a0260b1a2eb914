// Package ledger is `flashctl sale report`, the closing report of a sale:
// the unit ledger, the timing and the gateways' funnel (package funnel), as
// text, JSON or a self-contained HTML page (sale_report.tmpl, in the look of
// package look).
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
package ledger
