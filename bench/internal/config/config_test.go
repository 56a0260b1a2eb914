package config

import (
	"io"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestBadFlagsGiveClearErrors(t *testing.T) {
	base := []string{"-dev", "-items", "1"}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-scenario", "stampede"}, `-scenario "stampede": want one of steady, flash-crowd, bots, retry-storm`},
		{[]string{"-url", "ftp://x:1"}, "want http://host:port or https://host:port"},
		{[]string{"-insecure"}, "-insecure is for an https -url"},
		{[]string{"-url", "https://x:1", "-engine", "epoll"}, "-engine epoll speaks plain http only"},
		{[]string{"-engine", "turbo"}, `-engine "turbo": want auto, epoll or portable`},
		{[]string{"-source-addrs", "10.0.0.x"}, `-source-addrs: "10.0.0.x" is not an IP address`},
		{[]string{"-source-addrs", "127.0.0.2", "-source-ips", "2"}, "give one"},
		{[]string{"-c", "0"}, "-c 0: want at least 1 connection"},
		{[]string{"-rate", "fast"}, `"fast" is not a positive rate`},
		{[]string{"-rate", "100:5s,200"}, "every stage of a schedule needs RATE:DURATION"},
		{[]string{"-clicks", "3-1"}, "-clicks \"3-1\""},
		{[]string{"-pay", "0.8", "-cancel", "0.3"}, "add up to at most 1"},
		{[]string{"-retry-fraction", "2"}, "-retry-fraction 2: want 0..1"},
		{[]string{"-items", "1,x"}, `-items: "x" is not a positive item id`},
		{[]string{"-audit"}, "-audit needs -sale ID"},
		{[]string{"-source-ips", "4", "-url", "http://10.0.0.1:80"}, "only for an IPv4 loopback target"},
		{[]string{"-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"-shard", "3/3", "-seed", "1"}, `-shard "3/3": want i/N with 0 <= i < N <= 1024`},
		{[]string{"-shard", "a/b"}, `-shard "a/b"`},
		{[]string{"-shard", "1/3"}, "give the same -seed to all"},
		{[]string{"-start-at", "tomorrow"}, `-start-at "tomorrow": want an RFC 3339 time`},
		{[]string{"extra"}, `unexpected argument "extra" (flags only; the subcommands are merge and compare, first)`},
		{[]string{"flash-crowd"}, `unexpected argument "flash-crowd": a scenario is chosen with -scenario flash-crowd`},
	}
	for _, c := range cases {
		_, err := Load(append(append([]string{}, base...), c.args...), env(nil), io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want it to contain %q", c.args, err, c.want)
		}
	}
	if _, err := Load([]string{"-items", "1"}, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "no token signer") {
		t.Errorf("no secret: err = %v", err)
	}
	if _, err := Load([]string{"-dev"}, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "no items") {
		t.Errorf("no items: err = %v", err)
	}
}

// -h prints what bench does, its subcommands and its flags, and is not an
// error of the run.
func TestHelpNamesScenariosAndSubcommands(t *testing.T) {
	var out strings.Builder
	if _, err := Load([]string{"-h"}, env(nil), &out); err != ErrHelp {
		t.Fatalf("-h: err = %v, want ErrHelp", err)
	}
	for _, want := range []string{"usage: bench [flags]", "-scenario steady, flash-crowd, bots, retry-storm", "bench merge [flags] DIR...", "bench compare A B", "-think duration"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-h output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestDefaultsAndEnvironment(t *testing.T) {
	c, err := Load([]string{"-scenario", "flash-crowd", "-items", "7,8", "-rate", "100:1s,200:2s"},
		env(map[string]string{"FLASHSALE_JWT_SECRET": "s3", "FLASHSALE_REDIS": "a:1, b:2", "DATABASE_URL": "postgres://x"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Users != 500_000 || c.JWTSecret != "s3" || c.Addr != "127.0.0.1:8080" || len(c.Items) != 2 || c.Ramp != 2*time.Second {
		t.Fatalf("config = %+v", c)
	}
	if len(c.Redis) != 2 || c.Redis[1] != "b:2" || c.DatabaseURL != "postgres://x" {
		t.Fatalf("env not read: %+v", c)
	}
	if len(c.Rate) != 2 || c.Rate[1] != (Stage{Rate: 200, For: 2 * time.Second}) {
		t.Fatalf("rate = %+v", c.Rate)
	}
	c, err = Load([]string{"-scenario", "bots", "-dev", "-sale", "5"}, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Users != 4 || c.SourceIPs != 4 || c.JWTSecret != DevSecret || len(c.Sources()) != 4 || c.Sources()[3].String() != "127.0.0.4" {
		t.Fatalf("bots config = %+v", c)
	}
}

// -source-addrs auto takes this host's addresses beyond loopback, or says
// there are none.
func TestSourceAddrsAuto(t *testing.T) {
	addrs, err := parseSources("auto")
	if err != nil {
		if !strings.Contains(err.Error(), "no address beyond loopback") {
			t.Fatal(err)
		}
		return
	}
	for _, a := range addrs {
		if a.IsLoopback() || !a.IsGlobalUnicast() {
			t.Errorf("auto gave %s", a)
		}
	}
	t.Logf("this host's addresses: %v", addrs)
}
