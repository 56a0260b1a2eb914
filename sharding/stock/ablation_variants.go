//go:build ablation_noop || ablation_bare

package stock

import "flashsale/lua/ablation"

// The ablation's variants of the joined reserve script (issue 58,
// deploy/ablation.sh): a gateway built with one of these tags is a
// measurement, never a release.
var joinedSrc = map[string]string{"noop": ablation.Noop, "bare": ablation.Bare}[ablationTag]
