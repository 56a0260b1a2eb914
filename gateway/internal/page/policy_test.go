package page

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestPolicyNamesTheSalesImageOrigins: the page's policy allows images from
// its own site and from the sale's https origins, nothing else, and the
// page's ETag names a policy that is not the default one.
func TestPolicyNamesTheSalesImageOrigins(t *testing.T) {
	def := string(DefaultPolicy.CSP)
	if !strings.Contains(def, "img-src 'self' data:;") || !strings.Contains(def, "default-src 'none'") || !strings.Contains(def, "script-src 'self';") {
		t.Fatalf("default policy %q", def)
	}
	if PolicyFor(nil) != DefaultPolicy {
		t.Fatal("no origins: not the default policy")
	}
	p := PolicyFor([]string{"https://cdn.example.org:8443", "https://img.shop.example"})
	if got := string(p.CSP); !strings.Contains(got, "img-src 'self' data: https://cdn.example.org:8443 https://img.shop.example;") ||
		strings.Replace(got, " https://cdn.example.org:8443 https://img.shop.example", "", 1) != def {
		t.Fatalf("policy %q: want the default one with the two origins in img-src and nothing else", got)
	}
	s := Default()
	plain := s.AppendPageETag(nil, DefaultPolicy)
	branded := s.AppendPageETag(nil, p)
	other := s.AppendPageETag(nil, PolicyFor([]string{"https://img.shop.example"}))
	if !bytes.Equal(plain, s.Page().ETag) || bytes.Equal(branded, plain) || bytes.Equal(branded, other) ||
		!regexp.MustCompile(`^"[0-9a-f]{24}-[0-9a-f]{8}"$`).Match(branded) {
		t.Fatalf("ETags: default %s, branded %s, other %s", plain, branded, other)
	}
	var buf [64]byte
	if n := testing.AllocsPerRun(100, func() { _ = s.AppendPageETag(buf[:0], p) }); n != 0 {
		t.Fatalf("AppendPageETag: %v allocs", n)
	}
}
