package config

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
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
		"FLASHSALE_JWT_SECRET": "0123456789abcdef0123", "FLASHSALE_BUDGET": "200ms", "FLASHSALE_LISTEN": ":1",
		"KAFKA_BROKERS": "a:1, b:2", "FLASHSALE_TRUSTED_PROXIES": "10.0.0.0/8,192.0.2.1", "FLASHSALE_DEV": "true",
	})
	c, err := Load([]string{"-listen", "127.0.0.1:9999", "-ip-rate=7"}, e, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9999" || c.Budget != 200*time.Millisecond || c.IPRate != 7 || !c.Dev ||
		len(c.Kafka.Brokers) != 2 || c.Kafka.Brokers[1] != "b:2" || len(c.TrustedProxies) != 2 || c.TrustedProxies[1].Bits() != 32 {
		t.Fatalf("%+v", c)
	}
}

func TestBadValues(t *testing.T) {
	for _, args := range [][]string{
		{"-dev", "-budget", "soon"}, {"-dev", "-nope"}, {"-dev", "-ip-burst", "0"}, {"-dev", "-poll-interval", "5s"},
		{"-dev", "-trusted-proxies", "10.0.0.0/33"}, {"-dev", "-jwt-skew", "1m"}, {"-dev", "extra"}, {"-jwt-secret", "short"},
		{"-dev", "-token-cache", "0"}, {"-dev", "-redis-batch-lanes", "-1"}, {"-dev", "-redis-batch-lanes", "1000"}, {"-dev", "-redis-flush-delay", "5ms"},
		{"-dev", "-relay-settle", "500ms"},
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

const fileSecret = "file-secret-0123456789abcdef"

func writeSecret(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "jwt-secret")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSecretFile(t *testing.T) {
	for _, c := range []struct{ name, content, want string }{
		{"plain", fileSecret, fileSecret},
		{"trailing newline", fileSecret + "\n", fileSecret},
		{"trailing CRLF", fileSecret + "\r\n", fileSecret},
		{"only one newline dropped", fileSecret + "\n\n", fileSecret + "\n"},
		{"blanks kept", " " + fileSecret + " \n", " " + fileSecret + " "},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeSecret(t, c.content)
			cfg, err := Load([]string{"-jwt-secret-file", p}, env(nil), io.Discard)
			if err != nil || cfg.JWTSecret != c.want || cfg.JWTSecretFile != p {
				t.Fatalf("flag: secret %q, file %q, err %v; want %q", cfg.JWTSecret, cfg.JWTSecretFile, err, c.want)
			}
			cfg, err = Load(nil, env(map[string]string{"FLASHSALE_JWT_SECRET_FILE": p}), io.Discard)
			if err != nil || cfg.JWTSecret != c.want {
				t.Fatalf("environment: secret %q, err %v; want %q", cfg.JWTSecret, err, c.want)
			}
		})
	}
}

func TestSecretFromEnvironment(t *testing.T) {
	cfg, err := Load(nil, env(map[string]string{"FLASHSALE_JWT_SECRET": fileSecret}), io.Discard)
	if err != nil || cfg.JWTSecret != fileSecret || cfg.JWTSecretFile != "" {
		t.Fatalf("secret %q, file %q, err %v", cfg.JWTSecret, cfg.JWTSecretFile, err)
	}
}

func TestSecretErrors(t *testing.T) {
	p := writeSecret(t, fileSecret)
	missing := filepath.Join(t.TempDir(), "nope")
	short := writeSecret(t, "short-secret\n")
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"flag and file", []string{"-jwt-secret", "flag-secret-0123456789", "-jwt-secret-file", p}, nil, "both -jwt-secret"},
		{"environment and file", []string{"-jwt-secret-file", p}, map[string]string{"FLASHSALE_JWT_SECRET": "env-secret-0123456789"}, "both -jwt-secret"},
		{"flag and file from the environment", []string{"-jwt-secret", "flag-secret-0123456789"}, map[string]string{"FLASHSALE_JWT_SECRET_FILE": p}, "both -jwt-secret"},
		{"both in the environment", nil, map[string]string{"FLASHSALE_JWT_SECRET": "env-secret-0123456789", "FLASHSALE_JWT_SECRET_FILE": p}, "both -jwt-secret"},
		{"missing file", []string{"-jwt-secret-file", missing}, nil, "-jwt-secret-file: open " + missing},
		{"missing file even with -dev", []string{"-dev", "-jwt-secret-file", missing}, nil, "no such file"},
		{"empty file", []string{"-jwt-secret-file", writeSecret(t, "")}, nil, "is empty"},
		{"newline only", []string{"-jwt-secret-file", writeSecret(t, "\n")}, nil, "is empty"},
		{"short secret in file", []string{"-jwt-secret-file", short}, nil, "is 12 bytes"},
		{"dev secret in file without -dev", []string{"-jwt-secret-file", writeSecret(t, DevJWTSecret)}, nil, "refused without -dev"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(c.args, env(c.env), io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v; want it to say %q", err, c.want)
			}
			for _, s := range []string{fileSecret, "flag-secret", "env-secret", "short-secret"} {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("error %q shows the secret", err)
				}
			}
		})
	}
}

// TestConfigNeverShowsTheSecret formats and logs a Config every way a
// program might and requires that the secret appears in none of them.
func TestConfigNeverShowsTheSecret(t *testing.T) {
	const secret = "do-not-print-me-0123456789"
	cfg, err := Load([]string{"-jwt-secret", secret}, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var text, js strings.Builder
	slog.New(slog.NewTextHandler(&text, nil)).Info("config", "cfg", cfg, "ptr", &cfg)
	slog.New(slog.NewJSONHandler(&js, nil)).Info("config", "cfg", cfg, "ptr", &cfg)
	marshalled, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var usage strings.Builder
	Usage(&usage)
	verbS := "%s" // a variable: the test is of what each verb prints
	outs := map[string]string{
		"%v": fmt.Sprintf("%v", cfg), "%+v": fmt.Sprintf("%+v", cfg), "%s": fmt.Sprintf(verbS, cfg),
		"%#v": fmt.Sprintf("%#v", cfg), "%v of a pointer": fmt.Sprintf("%v", &cfg), "%+v of a pointer": fmt.Sprintf("%+v", &cfg),
		"%v in a slice": fmt.Sprint([]Config{cfg}), "String": cfg.String(), "slog text": text.String(), "slog JSON": js.String(),
		"json.Marshal": string(marshalled), "Usage": usage.String(),
	}
	for how, out := range outs {
		if strings.Contains(out, secret) {
			t.Errorf("%s shows the secret: %s", how, out)
		}
	}
	for _, how := range []string{"%+v", "%#v", "slog text", "slog JSON"} {
		if !strings.Contains(outs[how], redactedSecret) || !strings.Contains(outs[how], "127.0.0.1:8080") {
			t.Errorf("%s lacks the redacted secret or the other settings: %s", how, outs[how])
		}
	}
	if !strings.HasPrefix(outs["%#v"], "config.Config{") {
		t.Errorf("%%#v = %s", outs["%#v"])
	}
	if cfg.JWTSecret != secret {
		t.Fatal("formatting changed the secret")
	}

	// -h never shows it either.
	var help strings.Builder
	if _, err := Load([]string{"-jwt-secret", secret, "-h"}, env(nil), &help); err == nil || strings.Contains(help.String(), secret) {
		t.Fatalf("-h: %v, %s", err, help.String())
	}
}

func TestTicketSecrets(t *testing.T) {
	const cur, prev = "ticket-current-0123456789", "ticket-previous-0123456789"
	cases := []struct {
		name       string
		args       []string
		env        map[string]string
		cur, prev  string
		errContain string
	}{
		{name: "none", cur: "", prev: ""},
		{name: "environment", env: map[string]string{"FLASHSALE_TICKET_SECRET": cur, "FLASHSALE_TICKET_SECRET_PREVIOUS": prev}, cur: cur, prev: prev},
		{name: "file, one line", args: []string{"-ticket-secret-file", writeSecret(t, cur+"\n")}, cur: cur},
		{name: "file, rotation", args: []string{"-ticket-secret-file", writeSecret(t, cur+"\r\n"+prev+"\n")}, cur: cur, prev: prev},
		{name: "file and flag", args: []string{"-ticket-secret-file", writeSecret(t, cur), "-ticket-secret", cur}, errContain: "one way"},
		{name: "file, blank first line", args: []string{"-ticket-secret-file", writeSecret(t, "\n"+prev)}, errContain: "no blank lines"},
		{name: "file, three lines", args: []string{"-ticket-secret-file", writeSecret(t, cur+"\n"+prev+"\n"+prev)}, errContain: "at most the previous"},
		{name: "file missing", args: []string{"-ticket-secret-file", "/nonexistent/ticket"}, errContain: "-ticket-secret-file"},
		{name: "short", env: map[string]string{"FLASHSALE_TICKET_SECRET": "short"}, errContain: "at least 16"},
		{name: "previous alone", env: map[string]string{"FLASHSALE_TICKET_SECRET_PREVIOUS": prev}, errContain: "without -ticket-secret"},
		{name: "ttl zero", args: []string{"-ticket-ttl", "0s"}, errContain: "-ticket-ttl"},
		{name: "bad page token", args: []string{"-page-token", "header:x"}, errContain: "-page-token"},
		{name: "page token with a quote", args: []string{"-page-token", `cookie:a"b`}, errContain: "-page-token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Load(append([]string{"-dev"}, c.args...), env(c.env), io.Discard)
			if c.errContain != "" {
				if err == nil || !strings.Contains(err.Error(), c.errContain) {
					t.Fatalf("err %v, want one containing %q", err, c.errContain)
				}
				for _, s := range []string{cur, prev} {
					if strings.Contains(err.Error(), s) {
						t.Fatalf("the error shows a secret: %v", err)
					}
				}
				return
			}
			if err != nil || cfg.TicketSecret != c.cur || cfg.TicketSecretPrevious != c.prev {
				t.Fatalf("secrets %q %q, err %v", cfg.TicketSecret, cfg.TicketSecretPrevious, err)
			}
			if out := fmt.Sprintf("%+v %#v", cfg, cfg); (c.cur != "" && strings.Contains(out, c.cur)) || (c.prev != "" && strings.Contains(out, c.prev)) {
				t.Fatalf("formatting shows a ticket secret: %s", out)
			}
		})
	}
}

func TestProofOfWorkFlags(t *testing.T) {
	cfg, err := Load([]string{"-dev", "-pow-difficulty", "18", "-pow-auto-rate", "500", "-pow-ttl", "90s"}, env(nil), io.Discard)
	if err != nil || cfg.PowDifficulty != 18 || cfg.PowAutoRate != 500 || cfg.PowTTL != 90*time.Second {
		t.Fatalf("%+v %v", cfg, err)
	}
	if d := Default(); d.PowDifficulty != 0 || d.PowAutoRate != 0 {
		t.Fatalf("proof of work is on by default: %d %v", d.PowDifficulty, d.PowAutoRate)
	}
	for _, args := range [][]string{
		{"-pow-difficulty", "-1"}, {"-pow-difficulty", "29"}, {"-pow-difficulty", "hard"},
		{"-pow-auto-rate", "-5"}, {"-pow-auto-rate", "NaN"}, {"-pow-ttl", "1s"}, {"-pow-ttl", "1h"},
	} {
		_, err := Load(append([]string{"-dev"}, args...), env(nil), io.Discard)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: err %v, want one naming %s", args, err, args[0])
		}
	}
}
