package testenv

import (
	"fmt"
	"strings"
	"testing"
)

// verdict records what Missing decided instead of ending the test.
type verdict struct {
	testing.TB
	failed, skipped string
}

func (v *verdict) Helper()           {}
func (v *verdict) Fatal(args ...any) { v.failed = fmt.Sprint(args...) }
func (v *verdict) Skip(args ...any)  { v.skipped = fmt.Sprint(args...) }

// TestMissingFailsUnderRequireStack: under FLASHSALE_REQUIRE_STACK=1 a test
// that lacks a real part fails, saying what is missing; without the flag it
// skips. TestSecurePurchasePath and TestFaultBrokerStop skipped on the kfake
// broker, and TestFaultPartitionedGatewayVoid without iptables, even under
// the flag, where a missing service or browser failed.
func TestMissingFailsUnderRequireStack(t *testing.T) {
	const why = "the broker is kfake: this test needs Apache Kafka"
	for _, c := range []struct {
		env  string
		fail bool
	}{{"1", true}, {"", false}, {"0", false}} {
		t.Setenv("FLASHSALE_REQUIRE_STACK", c.env)
		v := &verdict{}
		Missing(v, why)
		switch {
		case c.fail && (v.skipped != "" || !strings.Contains(v.failed, why)):
			t.Errorf("FLASHSALE_REQUIRE_STACK=%q: failed %q, skipped %q; want it to fail saying %q", c.env, v.failed, v.skipped, why)
		case !c.fail && (v.failed != "" || !strings.Contains(v.skipped, why)):
			t.Errorf("FLASHSALE_REQUIRE_STACK=%q: failed %q, skipped %q; want it to skip saying %q", c.env, v.failed, v.skipped, why)
		}
	}
}
