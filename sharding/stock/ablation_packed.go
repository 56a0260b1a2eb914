//go:build ablation_packed

package stock

const ablationTag = "packed"
