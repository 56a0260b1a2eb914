//go:build ablation_noop || ablation_bare || ablation_packed

package stock

import (
	"strings"

	"flashsale/lua"
	"flashsale/lua/ablation"
)

// The ablation's variants of the joined reserve script (issue 58,
// deploy/ablation.sh): a gateway built with one of these tags is a
// measurement, never a release.
var joinedSrc = func() string {
	switch ablationTag {
	case "noop":
		return ablation.Noop
	case "bare":
		return ablation.Bare
	}
	src := lua.ReserveMany
	i := strings.Index(src, "-- reserve_many.lua")
	return src[:i] + ablation.Unpack + strings.ReplaceAll(src[i:], "ARGV", "argv")
}()

// packArgs joins each reservation's arguments into one, with packSep
// (ablation (d)).
const packArgs = ablationTag == "packed"

const packSep = ablation.PackSep
