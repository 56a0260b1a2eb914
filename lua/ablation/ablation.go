// Package ablation holds the reserve script variants of issue 58's
// ablation run (deploy/ablation.sh), which gateways built with a build tag
// (ablation_noop, ablation_bare: sharding/stock) send in
// place of reserve_many.lua. They are measurements, never shipped: a
// gateway built without a tag has none of them.
package ablation

import _ "embed"

// Noop takes reserve_many.lua's keys and arguments and answers its shape
// at once. See noop.lua.
//
//go:embed noop.lua
var Noop string

// Bare runs reserve_many.lua's redis.calls for new buyers with no
// validation and no string building. See bare.lua.
//
//go:embed bare.lua
var Bare string
