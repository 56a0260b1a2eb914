//go:build ablation_bare

package stock

const ablationTag = "bare"
