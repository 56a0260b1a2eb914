package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/redis/rueidis"
)

// RedisUser is an ACL user set up on every node of the local cluster for one
// test (ACL users are per node), deleted when the test ends.
type RedisUser struct {
	Name, Password string
	t              testing.TB
	nodes          []rueidis.Client
}

// NewRedisUser creates a user with a random name and password and the ACL
// rules given (for instance "~*", "+@all", "-wait").
func NewRedisUser(t testing.TB, rules ...string) *RedisUser {
	t.Helper()
	Require(t, "redis")
	var b [8]byte
	_, _ = rand.Read(b[:])
	u := &RedisUser{Name: "test-" + hex.EncodeToString(b[:4]), Password: hex.EncodeToString(b[4:]) + "-pw", t: t}
	for _, addr := range RedisAddrs() {
		node, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true})
		if err != nil {
			t.Fatalf("testenv: redis node %s: %v", addr, err)
		}
		u.nodes = append(u.nodes, node)
	}
	t.Cleanup(func() {
		for _, n := range u.nodes {
			n.Do(context.Background(), n.B().AclDeluser().Username(u.Name).Build())
			n.Close()
		}
	})
	u.Set(append([]string{"on", ">" + u.Password}, rules...)...)
	return u
}

// Set applies more ACL rules to the user on every node. Connections already
// signed in as the user get the new permissions at once.
func (u *RedisUser) Set(rules ...string) {
	u.t.Helper()
	for _, n := range u.nodes {
		if err := n.Do(context.Background(), n.B().AclSetuser().Username(u.Name).Rule(rules...).Build()).Error(); err != nil {
			u.t.Fatalf("testenv: ACL SETUSER %s: %v", u.Name, err)
		}
	}
}

// Client returns a cluster client signed in as the user, closed when the
// test ends.
func (u *RedisUser) Client() rueidis.Client {
	u.t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: RedisAddrs(), Username: u.Name, Password: u.Password})
	if err != nil {
		u.t.Fatalf("testenv: redis client as %s: %v", u.Name, err)
	}
	u.t.Cleanup(c.Close)
	return c
}
