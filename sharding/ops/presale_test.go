package ops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPresaleLoadRefusesABadFileFirst: a malformed list is refused before
// any store is asked.
func TestPresaleLoadRefusesABadFileFirst(t *testing.T) {
	p := filepath.Join(t.TempDir(), "users.txt")
	if err := os.WriteFile(p, []byte("5\nsix\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runMainEnv(map[string]string{"FLASHSALE_REDIS": "127.0.0.1:1"}, "sale", "presale", "load", "--sale", "5", "--users", p)
	if code != ExitFail || !strings.Contains(errOut, "line 2") || out != "" {
		t.Fatalf("exit %d, %q %q", code, out, errOut)
	}
}
