package schema

// The words the writer stores in orders.failure and order_history (migration
// 00002), and what they mean for a unit: the writer writes them, the closing
// ledger (flashctl sale report) reads them back, so they live here, below
// both.

// Failure reasons of FAILED orders (orders.failure, order_history.detail).
const (
	// FailSoldOut: PostgreSQL's sold count would exceed the quantity. Redis
	// let through more than PostgreSQL accepts (a unit a failover gave back
	// twice): the unit is kept, not returned, or Redis would sell it again
	// to be refused again, in a loop.
	FailSoldOut = "sold out in PostgreSQL: the item's sold count would exceed its quantity"
	// FailUnknownItem: no such item in the order's sale; the unit is kept.
	FailUnknownItem = "unknown item: no such item in this sale"
	// FailActiveOrder: the user already held an active order (Redis lost
	// the buyer record in a failover); the unit is returned with the real
	// order's buyer record.
	FailActiveOrder = "the user already holds an active order in this sale"
	// FailGhost: a reservation Redis held with no journal entry and no
	// order, settled by the writer's ghost sweep; the unit is returned.
	FailGhost = "ghost reservation: held in Redis with no journal entry and no order; reclaimed by the sweep"
)

// FailureReturnsUnit reports whether a FAILED order with reason gives its
// unit back to Redis (see the reasons above).
func FailureReturnsUnit(reason string) bool {
	return reason == FailActiveOrder || reason == FailGhost
}

// Causes of a status change (order_history.cause).
const (
	CauseReserve = "reserve"     // the reservation persisted: PENDING
	CausePay     = "pay"         // PAID
	CauseCancel  = "cancel"      // CANCELLED
	CauseExpiry  = "expiry"      // EXPIRED
	CauseFailure = "failure"     // FAILED by PostgreSQL; detail is the reason
	CauseGhost   = "ghost-sweep" // FAILED by the ghost sweep; detail is FailGhost
)
