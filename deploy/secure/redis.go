package secure

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// RedisUser is one `user NAME RULES...` line of redis-users.acl.
type RedisUser struct {
	Name  string
	Rules []string
}

// ReadRedisUsers reads the ACL users of path; comments and blank lines are
// skipped, any other line must be a user line.
func ReadRedisUsers(path string) ([]RedisUser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []RedisUser
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if f[0] != "user" || len(f) < 3 {
			return nil, fmt.Errorf("%s:%d: want `user NAME RULES...`", path, n)
		}
		for _, r := range f[2:] {
			if strings.HasPrefix(r, ">") || strings.HasPrefix(r, "#") || r == "nopass" {
				return nil, fmt.Errorf("%s:%d: user %s: a password in the rules (they come from the Secret)", path, n, f[1])
			}
		}
		out = append(out, RedisUser{Name: f[1], Rules: f[2:]})
	}
	return out, sc.Err()
}
