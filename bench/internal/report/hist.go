package report

import (
	"github.com/HdrHistogram/hdrhistogram-go"
)

// encodeHist returns h in hdrhistogram's base64 compressed encoding (V2), or
// "" for an empty or nil histogram.
func encodeHist(h *hdrhistogram.Histogram) string {
	if h == nil || h.TotalCount() == 0 {
		return ""
	}
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return "" // only an unknown version fails
	}
	return string(b)
}

// decodeHist decodes what encodeHist wrote; "" and a malformed text give nil
// (Load checks every histogram and reports a malformed one).
func decodeHist(s string) *hdrhistogram.Histogram {
	if s == "" {
		return nil
	}
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil
	}
	return h
}

// mergeHist returns a merged with b's encoding, both encodings.
func mergeHist(a, b string) (string, error) {
	if b == "" {
		return a, nil
	}
	hb, err := hdrhistogram.Decode([]byte(b))
	if err != nil {
		return "", err
	}
	if a == "" {
		return encodeHist(hb), nil
	}
	ha, err := hdrhistogram.Decode([]byte(a))
	if err != nil {
		return "", err
	}
	ha.Merge(hb)
	return encodeHist(ha), nil
}

// pctPoint is one point of a percentile-distribution plot.
type pctPoint struct {
	Q  float64 // percentile, 0..100
	Ms float64 // latency at it
}

// distribution returns h's percentile distribution (HdrHistogram's
// "percentile distribution" output, 5 ticks per half distance), ending at
// the maximum.
func distribution(h *hdrhistogram.Histogram) []pctPoint {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	var out []pctPoint
	for _, b := range h.CumulativeDistributionWithTicks(5) {
		out = append(out, pctPoint{Q: b.Quantile, Ms: msOf(b.ValueAt)})
	}
	return out
}
