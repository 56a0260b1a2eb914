//go:build !ablation_noop && !ablation_bare

package stock

import "flashsale/lua"

// joinedSrc is the script a joined unit of reservations runs: reserve_many.lua.
// Issue 58's ablation (deploy/ablation.sh) builds gateways with a tag that
// puts a variant in its place (ablation_variants.go).
var joinedSrc = lua.ReserveMany
