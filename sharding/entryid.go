package sharding

import (
	"strconv"
	"strings"
)

// ValidEntryID reports whether s is a Redis stream entry id, <ms>-<seq>,
// both decimal and within 64 bits.
func ValidEntryID(s string) bool {
	ms, seq, ok := strings.Cut(s, "-")
	if !ok || ms == "" || seq == "" {
		return false
	}
	_, err1 := strconv.ParseUint(ms, 10, 64)
	_, err2 := strconv.ParseUint(seq, 10, 64)
	return err1 == nil && err2 == nil
}

// EntryAtOrBefore reports whether stream entry id a is at or before b; false
// when either is malformed.
func EntryAtOrBefore(a, b string) bool {
	am, as, ok1 := strings.Cut(a, "-")
	bm, bs, ok2 := strings.Cut(b, "-")
	x, err1 := strconv.ParseUint(am, 10, 64)
	y, err2 := strconv.ParseUint(bm, 10, 64)
	xs, err3 := strconv.ParseUint(as, 10, 64)
	ys, err4 := strconv.ParseUint(bs, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return false
	}
	return x < y || (x == y && xs <= ys)
}
