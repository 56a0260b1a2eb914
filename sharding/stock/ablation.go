//go:build !ablation_noop && !ablation_bare && !ablation_packed

package stock

import "flashsale/lua"

// joinedSrc is the script a joined unit of reservations runs: reserve_many.lua.
// Issue 58's ablation (deploy/ablation.sh) builds gateways with a tag that
// puts a variant in its place (ablation_variants.go).
var joinedSrc = lua.ReserveMany

// packArgs joins each reservation's arguments into one, with packSep
// (ablation (d)).
const packArgs = false

// packSep is lua/ablation's PackSep (not imported: no release links the
// ablation's scripts).
const packSep = "\x1f"
