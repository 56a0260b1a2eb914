package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// load registers every common part plus one binary setting and parses.
func load(t *testing.T, args []string, env map[string]string) (Common, *Set, error) {
	t.Helper()
	c := NewCommon("127.0.0.1:9999", 5*time.Second)
	s := NewSet("test", "usage: test\n")
	c.Register(s, UseRedis|UseKafka|UsePostgres|UseAdmin|UseShutdown)
	var own time.Duration
	s.Add(Setting{Name: "own-wait", Usage: "a binary's own setting", Value: Duration(&own)})
	err := s.Parse(args, func(k string) string { return env[k] }, &bytes.Buffer{})
	if err == nil {
		err = c.Resolve()
	}
	return c, s, err
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEnvName(t *testing.T) {
	for in, want := range map[string]string{"redis": "FLASHSALE_REDIS", "redis-tls-ca": "FLASHSALE_REDIS_TLS_CA", "log-level": "FLASHSALE_LOG_LEVEL"} {
		if got := EnvName(in); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDefaults(t *testing.T) {
	c, _, err := load(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Redis.Addrs, ",") != DefaultRedis || strings.Join(c.Kafka.Brokers, ",") != DefaultKafka ||
		c.Postgres.URL != DefaultDatabaseURL || c.Admin != "127.0.0.1:9999" || c.ShutdownGrace != 5*time.Second ||
		c.Log.Level != slog.LevelInfo || c.Log.Format != "text" || c.Redis.TLS.Config() != nil {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestPrecedenceAndConventionalNames(t *testing.T) {
	env := map[string]string{"KAFKA_BROKERS": "k:1, k:2", "DATABASE_URL": "postgres://x@h/db", "FLASHSALE_REDIS": "r:1",
		"FLASHSALE_LOG_FORMAT": "json", "FLASHSALE_ADMIN": "a:1"}
	c, _, err := load(t, []string{"-admin", "b:2", "-log-level=debug"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Kafka.Brokers, "|") != "k:1|k:2" || c.Postgres.URL != "postgres://x@h/db" || c.Redis.Addrs[0] != "r:1" ||
		c.Log.Format != "json" || c.Admin != "b:2" || c.Log.Level != slog.LevelDebug {
		t.Fatalf("got %+v", c)
	}
}

// The project has never been released: a setting has one flag name and the
// environment names of its own rule, and an old spelling is an unknown flag.
func TestOneNamePerSetting(t *testing.T) {
	for _, old := range []string{"-kafka", "-admin-addr", "-shutdown-timeout"} {
		if _, _, err := load(t, []string{old, "x"}, nil); err == nil || !strings.Contains(err.Error(), "flag provided but not defined: "+old) {
			t.Errorf("%s: %v, want an unknown flag", old, err)
		}
	}
	c, _, err := load(t, nil, map[string]string{"FLASHSALE_SHUTDOWN_TIMEOUT": "4s", "FLASHSALE_KAFKA": "k:9"})
	if err != nil || c.ShutdownGrace == 4*time.Second || (len(c.Kafka.Brokers) > 0 && c.Kafka.Brokers[0] == "k:9") {
		t.Fatalf("old environment names were read: %+v %v", c, err)
	}
}

func TestVersionAndHelp(t *testing.T) {
	c := NewCommon("", time.Second)
	s := NewSet("prog", "usage: prog [flags]\n")
	c.Register(s, UseRedis|UseKafka)
	var out bytes.Buffer
	if err := s.Parse([]string{"-version"}, func(string) string { return "" }, &out); !errors.Is(err, ErrVersion) || !strings.HasPrefix(out.String(), "prog ") {
		t.Fatalf("-version: %v %q", err, out.String())
	}
	out.Reset()
	if err := s.Parse([]string{"-h"}, func(string) string { return "" }, &out); !errors.Is(err, ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	for _, want := range []string{"usage: prog", "-kafka-brokers a,b,...", "env FLASHSALE_KAFKA_BROKERS, KAFKA_BROKERS", "default " + DefaultRedis, "-version"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, out.String())
		}
	}
}

func TestBadValues(t *testing.T) {
	ca := writeFile(t, "ca.pem", "not a certificate")
	empty := writeFile(t, "empty", "\n")
	two := writeFile(t, "two", "a\nb\n")
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"-redis="}, nil, "-redis names no seed"},
		{[]string{"-redis=localhost"}, nil, `-redis "localhost": want host:port`},
		{[]string{"-kafka-brokers=a:0"}, nil, "port in 1..65535"},
		{[]string{"-kafka-brokers="}, nil, "-kafka-brokers names no broker"},
		{nil, map[string]string{"KAFKA_BROKERS": "a:1", "FLASHSALE_KAFKA_BROKERS": "b:1"}, "environment FLASHSALE_KAFKA_BROKERS and KAFKA_BROKERS disagree"},
		{[]string{"-log-level=loud"}, nil, `want debug, info, warn or error, not "loud"`},
		{nil, map[string]string{"FLASHSALE_LOG_FORMAT": "xml"}, `environment FLASHSALE_LOG_FORMAT="xml": want one of text, json`},
		{[]string{"-shutdown-grace=0s"}, nil, "-shutdown-grace 0s: want a positive duration"},
		{[]string{"-start-wait=-1s"}, nil, "-start-wait -1s: want 0 (until stopped) or a positive duration"},
		{nil, map[string]string{"FLASHSALE_OWN_WAIT": "5"}, `FLASHSALE_OWN_WAIT="5": want a duration`},
		{[]string{"-database-url=mysql://x"}, nil, "want a postgres:// URL"},
		{[]string{"-database-url="}, nil, "-database-url is empty"},
		{[]string{"-redis-password-file=/nonexistent/pw"}, nil, "-redis-password-file: open /nonexistent/pw"},
		{[]string{"-redis-password-file=" + empty}, nil, "is empty"},
		{[]string{"-database-password-file=" + two}, nil, "more than one line"},
		{[]string{"-redis-user=gw"}, nil, "-redis-user gw has no password"},
		{[]string{"-kafka-sasl=plain"}, nil, "want one of"},
		{[]string{"-kafka-sasl=scram-sha-512"}, nil, "needs -kafka-user and -kafka-password-file"},
		{[]string{"-kafka-user=gw"}, nil, "need -kafka-sasl"},
		{[]string{"-redis-tls-ca=" + ca}, nil, "without -redis-tls"},
		{[]string{"-redis-tls", "-redis-tls-ca=" + ca}, nil, "no PEM certificate"},
		{[]string{"-kafka-tls", "-kafka-tls-ca=/nonexistent/ca"}, nil, "-kafka-tls-ca: open"},
		{[]string{"-kafka-tls", "-kafka-tls-cert=" + ca}, nil, "go together"},
		{[]string{"-redis-tls=maybe"}, nil, "invalid boolean"},
		{[]string{"-nope"}, nil, "not defined: -nope"},
	}
	for _, tc := range cases {
		_, _, err := load(t, tc.args, tc.env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: error %v, want one containing %q", tc.args, tc.env, err, tc.want)
		}
	}
}

func TestSecretsFromFilesAreNeverShown(t *testing.T) {
	const pw = "s3cr3t-Pa55word"
	f := writeFile(t, "pw", pw+"\n")
	c, _, err := load(t, []string{"-redis-user=gateway", "-redis-password-file=" + f, "-kafka-sasl=scram-sha-512",
		"-kafka-user=gateway", "-kafka-password-file=" + f, "-database-password-file=" + f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Redis.Password.Reveal() != pw || c.Kafka.Password.Reveal() != pw || c.Postgres.Password.Reveal() != pw {
		t.Fatalf("passwords not read: %q", c.Redis.Password.Reveal())
	}
	if o := c.Redis.ClientOption(); o.Password != pw || o.Username != "gateway" {
		t.Fatalf("rueidis option: user %q", o.Username)
	}
	if pc, err := c.Postgres.PoolConfig(); err != nil || pc.ConnConfig.Password != pw {
		t.Fatalf("pool config: %v", err)
	}
	js, _ := json.Marshal(c)
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("cfg", "cfg", c, "pw", c.Redis.Password)
	for _, shown := range []string{fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprintf("%x", c.Redis.Password),
		fmt.Sprintf("%q", c.Kafka.Password), string(js), logged.String()} {
		if strings.Contains(shown, pw) || strings.Contains(shown, fmt.Sprintf("%x", pw)) {
			t.Errorf("secret shown: %s", shown)
		}
	}
}

func TestSecretValueErrorsDoNotQuoteIt(t *testing.T) {
	var n int
	s := NewSet("p", "")
	s.Add(Setting{Name: "pin", Usage: "a secret number", Value: Int(&n), Secret: true})
	err := s.Parse([]string{"-pin=hunter2"}, func(string) string { return "" }, &bytes.Buffer{})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("flag error %v", err)
	}
	err = s.Parse(nil, func(string) string { return "hunter2" }, &bytes.Buffer{})
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "FLASHSALE_PIN") {
		t.Fatalf("env error %v", err)
	}
}

func TestLoggerFormats(t *testing.T) {
	var b bytes.Buffer
	Log{Level: slog.LevelWarn, Format: "json"}.Logger(&b).Info("hidden")
	Log{Level: slog.LevelWarn, Format: "json"}.Logger(&b).Warn("shown", "k", 1)
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil || m["msg"] != "shown" || m["k"] != 1.0 {
		t.Fatalf("json log %q: %v", b.String(), err)
	}
	b.Reset()
	Log{Level: slog.LevelInfo, Format: "text"}.Logger(&b).Info("hello", "k", 1)
	if !strings.Contains(b.String(), "msg=hello k=1") {
		t.Fatalf("text log %q", b.String())
	}
}
