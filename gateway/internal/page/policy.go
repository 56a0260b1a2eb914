package page

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Policy is the page's Content-Security-Policy for one sale: scripts,
// styles and requests from the page's own site only, and images from it
// and from the https origins the sale's branding names
// (sale.Sale.ImageOrigins), nothing else. It goes out as a header of
// the page, so the HTML stays the same bytes for every sale; the page's
// ETag names it (Site.AppendPageETag), so a cache holding the page under
// an older policy revalidates to the new one.
type Policy struct {
	// CSP is the header's value.
	CSP []byte
	tag []byte // 8 hex digits of CSP's hash; empty for DefaultPolicy
}

// cspHead and cspTail surround the image sources of the page's policy.
const (
	cspHead = "default-src 'none'; script-src 'self'; worker-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:"
	cspTail = "; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

// DefaultPolicy is the policy of a page whose sale names no image origin,
// or that the gateway does not know (yet).
var DefaultPolicy = &Policy{CSP: []byte(cspHead + cspTail)}

// PolicyFor returns the policy of a sale whose images come from origins
// ("https://host[:port]", as validated by sale.ValidImageURL).
func PolicyFor(origins []string) *Policy {
	if len(origins) == 0 {
		return DefaultPolicy
	}
	csp := []byte(cspHead + " " + strings.Join(origins, " ") + cspTail)
	sum := sha256.Sum256(csp)
	return &Policy{CSP: csp, tag: []byte(hex.EncodeToString(sum[:4]))}
}
