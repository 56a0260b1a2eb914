//go:build ablation_packed

package stock

// JoinedSrc is joinedSrc, for the ablation's test.
var JoinedSrc = joinedSrc
