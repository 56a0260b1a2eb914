package saleops

import (
	"slices"
	"strings"
	"testing"
)

// TestParsePresaleUsers: one id per line, comments and blank lines
// skipped, leading zeros dropped; a bad line fails the whole list, naming
// the line and why.
func TestParsePresaleUsers(t *testing.T) {
	got, err := ParsePresaleUsers(strings.NewReader("# vip\n 12 \n\n007 # old friend\n9223372036854775807\r\n"), "users.txt")
	if err != nil || !slices.Equal(got, []uint64{12, 7, 1<<63 - 1}) {
		t.Fatalf("good list: %v %v", got, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"1\n2\nabc\n", `users.txt line 3: "abc" is not a user id`},
		{"1\n0\n", "users.txt line 2: user id 0"},
		{"9223372036854775808\n", "users.txt line 1: user id 9223372036854775808 is over 9223372036854775807"},
		{"99999999999999999999\n", "line 1: user id 99999999999999999999 is over"},
		{"-4\n", `line 1: "-4" is not a user id`},
		{"1 2\n", `line 1: "1 2" is not a user id`},
		{"# nobody\n\n", "users.txt holds no user id"},
	} {
		if _, err := ParsePresaleUsers(strings.NewReader(tc.in), "users.txt"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
}
