// Package plan is `flashctl plan`: the shard count for a target purchase
// rate, with each step of the arithmetic written down, and where a sale's
// shards would land on the live masters; Measure runs the real reserve
// script against each master to find what one master runs.
package plan
