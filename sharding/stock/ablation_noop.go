//go:build ablation_noop

package stock

const ablationTag = "noop"
