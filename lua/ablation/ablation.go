// Package ablation holds the reserve script variants of issue 58's
// ablation run (deploy/ablation.sh), which gateways built with a build tag
// (ablation_noop, ablation_bare, ablation_packed: sharding/stock) send in
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

// PackSep joins a reservation's twelve arguments into one (ablation (d)).
const PackSep = "\x1f"

// Unpack is put in front of reserve_many.lua for ablation (d): it splits
// each packed argument back into twelve, into the table argv, which the
// script then reads in place of ARGV (sharding/stock renames the script's
// ARGV to argv).
const Unpack = `local argv = {}
for i = 1, #ARGV do
  for s in string.gmatch(ARGV[i] .. '\31', '([^\31]*)\31') do argv[#argv + 1] = s end
end
`
