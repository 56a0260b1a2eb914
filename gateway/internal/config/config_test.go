package config

import (
	"io"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaultsNeedASecret(t *testing.T) {
	if _, err := Load(nil, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "-jwt-secret") {
		t.Fatalf("err = %v", err)
	}
	c, err := Load([]string{"-dev"}, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.JWTSecret != DevJWTSecret || c.Listen != "127.0.0.1:8080" || c.Admin != "127.0.0.1:9102" || c.IPRate != 50 || c.UserBurst != 10 {
		t.Fatalf("%+v", c)
	}
	if _, err := Load(nil, env(map[string]string{"FLASHSALE_JWT_SECRET": DevJWTSecret}), io.Discard); err == nil {
		t.Fatal("dev secret accepted without -dev")
	}
}

func TestFlagWinsOverEnvironment(t *testing.T) {
	e := env(map[string]string{
		"FLASHSALE_JWT_SECRET": "0123456789abcdef0123", "FLASHSALE_BUDGET": "300ms", "FLASHSALE_LISTEN": ":1",
		"KAFKA_BROKERS": "a:1, b:2", "FLASHSALE_TRUSTED_PROXIES": "10.0.0.0/8,192.0.2.1", "FLASHSALE_DEV": "true",
	})
	c, err := Load([]string{"-listen", "127.0.0.1:9999", "-ip-rate=7"}, e, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9999" || c.Budget != 300*time.Millisecond || c.IPRate != 7 || !c.Dev ||
		len(c.Kafka) != 2 || c.Kafka[1] != "b:2" || len(c.TrustedProxies) != 2 || c.TrustedProxies[1].Bits() != 32 {
		t.Fatalf("%+v", c)
	}
}

func TestBadValues(t *testing.T) {
	for _, args := range [][]string{
		{"-dev", "-budget", "soon"}, {"-dev", "-nope"}, {"-dev", "-ip-burst", "0"}, {"-dev", "-poll-interval", "5s"},
		{"-dev", "-trusted-proxies", "10.0.0.0/33"}, {"-dev", "-jwt-skew", "1m"}, {"-dev", "extra"}, {"-jwt-secret", "short"},
		{"-dev", "-token-cache", "0"}, {"-dev", "-redis-batch-lanes", "-1"}, {"-dev", "-redis-batch-lanes", "1000"}, {"-dev", "-redis-flush-delay", "5ms"},
	} {
		if _, err := Load(args, env(nil), io.Discard); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
	if _, err := Load([]string{"-dev"}, env(map[string]string{"FLASHSALE_IP_RATE": "fast"}), io.Discard); err == nil ||
		!strings.Contains(err.Error(), "FLASHSALE_IP_RATE") {
		t.Fatalf("bad env: %v", err)
	}
}

func TestUsageTable(t *testing.T) {
	var b strings.Builder
	Usage(&b)
	if !strings.Contains(b.String(), "| `-budget` | `FLASHSALE_BUDGET` | `250ms` |") {
		t.Fatal(b.String())
	}
}
