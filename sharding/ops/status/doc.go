// Package status is `flashctl status`: one snapshot of a sale (per shard: its
// master, buyers and units; per item: Q, S, P, the units in moves and the
// drift against PostgreSQL; an unfinished reshard), or a watch that takes
// one every interval.
package status
