// Package preload is `flashctl preload`: a sale's stock copied from
// PostgreSQL into Redis (its description, with shard tags placed over the
// live masters, and each item's quantity split over the shards), and what its
// fair access keeps in Redis beside it, for a sale Redis lost or never had.
// A sale Redis holds is refused unless forced; a forced preload reconciles
// at once (package reconcile).
package preload
