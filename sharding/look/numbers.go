package look

import (
	"fmt"
	"math"
	"strconv"
)

// Commas writes n with thousands separators: 1,006,029.
func Commas(n int64) string { return group(strconv.FormatInt(n, 10)) }

// Count writes a number of things for a page: any integer kind with
// thousands separators, a float64 rounded to a whole one. It is the reports'
// template function count; anything else is printed as fmt.Sprint prints it.
func Count(v any) string {
	if f, ok := v.(float64); ok {
		return Commas(int64(math.Round(f)))
	}
	return group(fmt.Sprint(v))
}

// group puts thousands separators in s when it is a decimal integer (an
// optional minus, then digits), and returns any other text as it is.
func group(s string) string {
	digits := s
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if digits == "" {
		return s
	}
	for i := range len(digits) {
		if digits[i] < '0' || digits[i] > '9' {
			return s
		}
	}
	out := make([]byte, 0, len(s)+len(digits)/3)
	out = append(out, s[:len(s)-len(digits)]...)
	for i := range len(digits) {
		if i > 0 && (len(digits)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, digits[i])
	}
	return string(out)
}
