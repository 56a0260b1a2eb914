package app_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"flashsale/writer/internal/app"
)

func runMain(args []string, env map[string]string) (int, string, string) {
	var out, errb bytes.Buffer
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	code := app.Main(context.Background(), args, getenv, &out, &errb)
	return code, out.String(), errb.String()
}

func TestMainUsage(t *testing.T) {
	if code, _, errOut := runMain([]string{"frobnicate"}, nil); code != 2 || !strings.Contains(errOut, "unknown command") {
		t.Errorf("unknown command: %d %q", code, errOut)
	}
	if code, _, errOut := runMain([]string{"run", "-batch-size=-1"}, nil); code != 2 || !strings.Contains(errOut, "-batch-size -1: want 1..100000") {
		t.Errorf("bad flag: %d %q", code, errOut)
	}
	// Sales moved to flashctl: the writer keeps run and migrate.
	if code, _, errOut := runMain([]string{"sale", "create"}, nil); code != 2 || !strings.Contains(errOut, `unknown command "sale"`) || !strings.Contains(errOut, "flashctl sale") {
		t.Errorf("sale create: %d %q", code, errOut)
	}
	if code, _, errOut := runMain([]string{"migrate", "extra"}, nil); code != 2 || !strings.Contains(errOut, `unexpected argument "extra"`) {
		t.Errorf("migrate extra: %d %q", code, errOut)
	}
	for _, args := range [][]string{{"help"}, {"-h"}, {"run", "-help"}} {
		code, out, _ := runMain(args, nil)
		if code != 0 || !strings.Contains(out, "flashctl sale --help") || !strings.Contains(out, "-database-url string") ||
			!strings.Contains(out, "env FLASHSALE_DATABASE_URL, DATABASE_URL") {
			t.Errorf("%v: exit %d, %q", args, code, out)
		}
	}
	if code, out, _ := runMain([]string{"-version"}, nil); code != 0 || !strings.HasPrefix(out, "writer ") {
		t.Errorf("-version: %d %q", code, out)
	}
}
