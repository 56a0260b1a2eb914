package store

import "flashsale/writer/schema"

// Causes of a status change, as order_history.cause records them (package
// schema names them, below the writer and the ledger that reads them).
const (
	CauseReserve = schema.CauseReserve
	CausePay     = schema.CausePay
	CauseCancel  = schema.CauseCancel
	CauseExpiry  = schema.CauseExpiry
	CauseFailure = schema.CauseFailure
	CauseGhost   = schema.CauseGhost
)

// The order history (table order_history, migration 00002) is written by
// the statement that makes the change, as one more data-modifying CTE over
// the rows it returns: no extra round trip, and the row exists exactly when
// the change committed. historyFrom is that CTE: name AS (INSERT the rows of
// src (id, sale_id, item_id, user_id) reaching status for cause, with detail
// an SQL expression over src or NULL). The key (order_id, status) makes a
// retried batch write nothing twice.
func historyFrom(name, src, status, cause, detail string) string {
	return name + ` AS (
		INSERT INTO order_history (order_id, sale_id, item_id, user_id, status, cause, detail)
		SELECT id, sale_id, item_id, user_id, '` + status + `', '` + cause + `', ` + detail + ` FROM ` + src + `
		ON CONFLICT DO NOTHING
	)`
}
