package config

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	shared "flashsale/sharding/config"
)

func load(args []string, env map[string]string) (Config, error) {
	set := shared.NewSet("writer", "usage: writer\n")
	set.SetOutput(&bytes.Buffer{})
	return Load(set, args, func(k string) string { return env[k] })
}

func TestDefaults(t *testing.T) {
	c, err := load(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Group != "flashsale-writer" || c.Admin != "127.0.0.1:9103" || c.ExpiryInterval != 5*time.Second ||
		c.Topic != "flash-sale-orders" || c.DeadLetter != "flash-sale-orders.dlq" || len(c.Redis.Addrs) != 6 || !c.Migrate ||
		c.Postgres.URL != shared.DefaultDatabaseURL || c.ShutdownGrace != 15*time.Second || c.DrawLogInterval != time.Second {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestPrecedence(t *testing.T) {
	env := map[string]string{"FLASHSALE_GROUP": "from-env", "FLASHSALE_BATCH_SIZE": "100", "KAFKA_BROKERS": "a:1, b:2",
		"FLASHSALE_SALES": "7,8", "DATABASE_URL": "postgres://u@h/db"}
	c, err := load([]string{"-batch-size", "200", "-expiry-interval=100ms"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.Group != "from-env" || c.BatchSize != 200 || c.ExpiryInterval != 100*time.Millisecond ||
		strings.Join(c.Kafka.Brokers, "|") != "a:1|b:2" || len(c.Sales) != 2 || c.Sales[1] != 8 || c.Postgres.URL != "postgres://u@h/db" {
		t.Fatalf("got %+v", c)
	}
}

// TestMigrateBare: -migrate is a boolean flag, given bare or =false.
func TestMigrateBare(t *testing.T) {
	c, err := load([]string{"-migrate"}, map[string]string{"FLASHSALE_MIGRATE": "false"})
	if err != nil || !c.Migrate {
		t.Fatalf("bare -migrate: %v %v", c.Migrate, err)
	}
	if c, err = load([]string{"-migrate=false"}, nil); err != nil || c.Migrate {
		t.Fatalf("-migrate=false: %v %v", c.Migrate, err)
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, map[string]string{"FLASHSALE_BATCH_SIZE": "lots"}, `FLASHSALE_BATCH_SIZE="lots": want an integer`},
		{nil, map[string]string{"FLASHSALE_EXPIRY_INTERVAL": "30"}, "want a duration"},
		{[]string{"-batch-size=0"}, nil, "-batch-size 0: want 1..100000"},
		{[]string{"-dlq-topic=flash-sale-orders"}, nil, "is the order topic"},
		{[]string{"-retry-min=2s", "-retry-max=1s"}, nil, "retry backoff"},
		{[]string{"-log-level=loud"}, nil, "log-level"},
		{[]string{"-sales=1,x"}, nil, "sale id"},
		{[]string{"-nope"}, nil, "not defined"},
		{[]string{"-status-ttl=10ms"}, nil, "-status-ttl 10ms"},
		{[]string{"-migrate=perhaps"}, nil, "invalid boolean"},
		{[]string{"-replica-acks=-1"}, nil, "-replica-acks -1: want 0..16"},
		{[]string{"-replica-timeout=0s"}, nil, "-replica-timeout 0s: want 1ms..2.5s"},
		{[]string{"-replica-timeout=3s"}, nil, "-replica-timeout 3s: want 1ms..2.5s"},
		{nil, map[string]string{"DATABASE_URL": "postgres://a@h/x", "FLASHSALE_DATABASE_URL": "postgres://b@h/x"}, "disagree"},
		{[]string{"-shutdown-grace=0s"}, nil, "-shutdown-grace 0s"},
	}
	for _, tc := range cases {
		_, err := load(tc.args, tc.env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: error %v, want one mentioning %q", tc.args, tc.env, err, tc.want)
		}
	}
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	set := shared.NewSet("writer", "")
	set.SetOutput(&out)
	if _, err := Load(set, []string{"-version"}, func(string) string { return "" }); !errors.Is(err, shared.ErrVersion) || !strings.HasPrefix(out.String(), "writer ") {
		t.Fatalf("-version: %v %q", err, out.String())
	}
}
