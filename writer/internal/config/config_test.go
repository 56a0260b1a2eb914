package config

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func load(args []string, env map[string]string) (Config, error) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return Load(fs, args, func(k string) string { return env[k] })
}

func TestDefaults(t *testing.T) {
	c, err := load(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Group != "flashsale-writer" || c.AdminAddr != "127.0.0.1:9103" || c.ExpiryInterval != 30*time.Second ||
		c.Topic != "flash-sale-orders" || c.DeadLetter != "flash-sale-orders.dlq" || len(c.RedisAddrs) != 6 || !c.Migrate {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestPrecedence(t *testing.T) {
	env := map[string]string{"FLASHSALE_GROUP": "from-env", "FLASHSALE_BATCH_SIZE": "100", "KAFKA_BROKERS": "a:1, b:2",
		"FLASHSALE_WRITER_SALES": "7,8"}
	c, err := load([]string{"-batch-size", "200", "-expiry-interval=100ms"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.Group != "from-env" || c.BatchSize != 200 || c.ExpiryInterval != 100*time.Millisecond ||
		strings.Join(c.KafkaBrokers, "|") != "a:1|b:2" || len(c.Sales) != 2 || c.Sales[1] != 8 {
		t.Fatalf("got %+v", c)
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, map[string]string{"FLASHSALE_BATCH_SIZE": "lots"}, "FLASHSALE_BATCH_SIZE"},
		{nil, map[string]string{"FLASHSALE_EXPIRY_INTERVAL": "30"}, "not a duration"},
		{[]string{"-batch-size=0"}, nil, "batch size 0"},
		{[]string{"-dlq-topic=flash-sale-orders"}, nil, "is the order topic"},
		{[]string{"-retry-min=2s", "-retry-max=1s"}, nil, "retry backoff"},
		{[]string{"-log-level=loud"}, nil, "log-level"},
		{[]string{"-sales=1,x"}, nil, "sale id"},
		{[]string{"-nope"}, nil, "not defined"},
		{[]string{"-status-ttl=10ms"}, nil, "status ttl"},
	}
	for _, tc := range cases {
		_, err := load(tc.args, tc.env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: error %v, want one mentioning %q", tc.args, tc.env, err, tc.want)
		}
	}
}
