package sharding

import "testing"

// TestEntryIDs: stream entry ids are checked (they come from Redis and from
// Kafka headers) and ordered by time, then sequence, as numbers.
func TestEntryIDs(t *testing.T) {
	for _, s := range []string{"", "1", "1-", "-1", "a-1", "1-b", "1-1-1", "18446744073709551616-0", " 1-1"} {
		if ValidEntryID(s) {
			t.Errorf("ValidEntryID(%q) = true", s)
		}
	}
	for _, s := range []string{"0-0", "1765000000000-0", "1765000000000-42", "18446744073709551615-18446744073709551615"} {
		if !ValidEntryID(s) {
			t.Errorf("ValidEntryID(%q) = false", s)
		}
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"1-1", "1-1", true},
		{"1-1", "1-2", true},
		{"1-2", "1-1", false},
		{"9-9", "10-0", true}, // numbers, not strings
		{"10-0", "9-9", false},
		{"1-10", "1-9", false},
		{"x-1", "2-2", false},
		{"1-1", "", false},
	} {
		if got := EntryAtOrBefore(tc.a, tc.b); got != tc.want {
			t.Errorf("EntryAtOrBefore(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
