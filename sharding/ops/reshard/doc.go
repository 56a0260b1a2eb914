// Package reshard is `flashctl reshard`: a sale's shard count changed, or a
// crashed reshard resumed, by stock.Store.Reshard (told in
// sharding/stock/DESIGN.md), with the act recorded for the closing ledger.
package reshard
