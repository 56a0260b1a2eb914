package sharding

import (
	"strconv"
	"strings"
)

// ParseEntryID parses a Redis stream entry id, <ms>-<seq>, both decimal and
// within 64 bits (a relay watermark's sequence is the largest, 2^64-1).
func ParseEntryID(id string) (ms, seq uint64, ok bool) {
	a, b, found := strings.Cut(id, "-")
	ms, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	return ms, seq, found && err1 == nil && err2 == nil
}

// ValidEntryID reports whether s is a stream entry id (ParseEntryID).
func ValidEntryID(s string) bool {
	_, _, ok := ParseEntryID(s)
	return ok
}

// EntryAtOrBefore reports whether stream entry id a is at or before b; false
// when either is malformed.
func EntryAtOrBefore(a, b string) bool {
	am, as, ok1 := ParseEntryID(a)
	bm, bs, ok2 := ParseEntryID(b)
	return ok1 && ok2 && (am < bm || (am == bm && as <= bs))
}

// EntryBefore reports whether stream entry id a is strictly before b; false
// when either is malformed.
func EntryBefore(a, b string) bool {
	return EntryAtOrBefore(a, b) && !EntryAtOrBefore(b, a)
}
