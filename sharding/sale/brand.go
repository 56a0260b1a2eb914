package sale

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Brand is how a shop dresses its sale page: given in the sale file, checked
// by Validate, served with the public sale description and drawn by the
// page's script (never by the HTML, which stays the same bytes for every
// sale and user). Every field is optional.
type Brand struct {
	// Shop is the shop's name, shown beside the logo (at most
	// MaxShopLen characters). A logo needs it: the logo itself is
	// decorative, the name is what a screen reader reads.
	Shop string `json:"shop,omitempty"`
	// Logo is an image URL (see ValidImageURL).
	Logo string `json:"logo,omitempty"`
	// Accent is the page's accent colour, "#rgb" or "#rrggbb": the buy
	// button's background and the colour of links and secondary buttons.
	// It must read as text on the page's light backgrounds (see
	// AccentContrast); the page lightens it for a dark colour scheme.
	Accent string `json:"accent,omitempty"`
	// Banner is one line shown above the sale (at most MaxBannerLen
	// characters), for example "Free shipping on every order".
	Banner string `json:"banner,omitempty"`
}

// Bounds of the branding fields, in characters (runes) for text and bytes
// for URLs: a sale description is read by every buyer every few seconds.
const (
	MaxShopLen        = 80
	MaxBannerLen      = 200
	MaxDescriptionLen = 600
	MaxImageURLLen    = 2048
	// MaxImageOrigins bounds the https origins a sale's images come from:
	// each one is named in the page's Content-Security-Policy header.
	MaxImageOrigins = 8
)

// MinAccentContrast is the contrast ratio (WCAG 2.1, 1.4.3 for normal text)
// the accent colour must reach against each of PageLightBackgrounds.
const MinAccentContrast = 4.5

// PageLightBackgrounds are the sale page's light-scheme backgrounds the
// accent is drawn on (the page and its panels, gateway/internal/page's
// sale.css --bg and --panel, which a test there checks): accent text on
// them, and white text on an accent button, both read at MinAccentContrast.
var PageLightBackgrounds = []string{"#ffffff", "#f4f5f8"}

// validateBrand checks the branding fields of the sale and its items; the
// error names the field as the sale file spells it.
func (s *Sale) validateBrand() error {
	if b := s.Brand; b != nil {
		if err := validText("brand.shop", b.Shop, MaxShopLen, false); err != nil {
			return err
		}
		if err := validText("brand.banner", b.Banner, MaxBannerLen, false); err != nil {
			return err
		}
		if err := ValidImageURL(b.Logo); err != nil {
			return fmt.Errorf("brand.logo: %w", err)
		}
		if b.Logo != "" && strings.TrimSpace(b.Shop) == "" {
			return errors.New("brand.shop is missing: a logo needs the shop's name beside it (the logo is decorative; the name is what a screen reader reads)")
		}
		if err := validAccent(b.Accent); err != nil {
			return fmt.Errorf("brand.accent %q: %w", b.Accent, err)
		}
	}
	for i, it := range s.Items {
		field := fmt.Sprintf("items[%d] (item %d)", i, it.ID)
		if err := validText(field+".description", it.Description, MaxDescriptionLen, true); err != nil {
			return err
		}
		if err := ValidImageURL(it.Image); err != nil {
			return fmt.Errorf("%s.image: %w", field, err)
		}
	}
	if n := len(s.ImageOrigins()); n > MaxImageOrigins {
		return fmt.Errorf("brand.logo and items[].image: images from %d https origins, at most %d (each is named in the page's Content-Security-Policy)", n, MaxImageOrigins)
	}
	return nil
}

// validText checks a shown text: valid UTF-8, at most max characters, no
// control characters (line breaks only where multiline).
func validText(field, v string, max int, multiline bool) error {
	if !utf8.ValidString(v) {
		return fmt.Errorf("%s: not valid UTF-8", field)
	}
	if n := utf8.RuneCountInString(v); n > max {
		return fmt.Errorf("%s: %d characters, at most %d", field, n, max)
	}
	for _, r := range v {
		if unicode.IsControl(r) && !(multiline && r == '\n') {
			return fmt.Errorf("%s: control character %U (%s)", field, r, map[bool]string{true: "only line breaks", false: "one line of plain text"}[multiline])
		}
	}
	return nil
}

// hostPort is a lower-case DNS host name with an optional port: what may
// stand in a CSP source expression after "https://".
var hostPort = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:[0-9]{1,5})?$`)

// urlPath is the path, query and fragment an image URL may carry: the
// characters RFC 3986 allows there, without quotes, spaces or backslashes.
var urlPath = regexp.MustCompile(`^[A-Za-z0-9\-._~!$&()*+,;=:@/%?#]*$`)

// ValidImageURL checks an image URL of the branding: "" (none), a path on
// the page's own site ("/media/logo.svg", not "//host/..."), or an https
// URL with a host name and no user info. Anything else (javascript:, data:,
// http:, a relative path) is refused, so the page's Content-Security-Policy
// can name every origin an image comes from.
func ValidImageURL(v string) error {
	const want = "want an https:// URL or a path on this site starting with / (such as /sale/media/logo.svg)"
	switch {
	case v == "":
		return nil
	case len(v) > MaxImageURLLen:
		return fmt.Errorf("%d bytes, at most %d", len(v), MaxImageURLLen)
	case !urlPath.MatchString(strings.TrimPrefix(v, "https://")):
		return fmt.Errorf("%q has characters a URL may not (spaces, quotes, backslashes, control characters); %s", v, want)
	case strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "//"):
		if _, err := url.Parse(v); err != nil {
			return fmt.Errorf("%q: %v", v, err)
		}
		return nil
	case !strings.HasPrefix(v, "https://"):
		return fmt.Errorf("%q: %s", v, want)
	}
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("%q: %v", v, err)
	}
	if u.User != nil || !hostPort.MatchString(u.Host) {
		return fmt.Errorf("%q: want https://<host name>[:port]/..., lower case and without user info", v)
	}
	if p := u.Port(); p != "" {
		if n, _ := strconv.Atoi(p); n < 1 || n > 65535 {
			return fmt.Errorf("%q: port %s out of range", v, p)
		}
	}
	return nil
}

// ImageOrigins returns the https origins ("https://host[:port]") the sale's
// logo and item images come from, sorted and without repeats; images on
// the page's own site add none. It expects valid URLs.
func (s *Sale) ImageOrigins() []string {
	var out []string
	add := func(v string) {
		if u, err := url.Parse(v); err == nil && u.Scheme == "https" && u.Host != "" {
			out = append(out, "https://"+u.Host)
		}
	}
	if s.Brand != nil {
		add(s.Brand.Logo)
	}
	for _, it := range s.Items {
		add(it.Image)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// validAccent checks a hex colour and its contrast on the page.
func validAccent(v string) error {
	if v == "" {
		return nil
	}
	c, err := ParseHexColor(v)
	if err != nil {
		return err
	}
	for _, bg := range PageLightBackgrounds {
		b, _ := ParseHexColor(bg)
		if r := Contrast(c, b); r < MinAccentContrast {
			return fmt.Errorf("contrast %.2f:1 against the page's background %s, want at least %.1f:1 (WCAG 2.1 AA for text); pick a darker shade", r, bg, MinAccentContrast)
		}
	}
	return nil
}

// ParseHexColor reads "#rgb" or "#rrggbb" (either case) as 8-bit sRGB.
func ParseHexColor(v string) ([3]uint8, error) {
	var c [3]uint8
	if len(v) != 4 && len(v) != 7 || v[0] != '#' {
		return c, errors.New("want a hex colour such as #0a58ca or #05c")
	}
	hex := v[1:]
	for i := range c {
		var digits string
		if len(hex) == 3 {
			digits = strings.Repeat(hex[i:i+1], 2)
		} else {
			digits = hex[2*i : 2*i+2]
		}
		n, err := strconv.ParseUint(digits, 16, 8)
		if err != nil {
			return c, errors.New("want a hex colour such as #0a58ca or #05c")
		}
		c[i] = uint8(n)
	}
	return c, nil
}

// Contrast is the WCAG 2.1 contrast ratio of two colours, 1 to 21.
func Contrast(a, b [3]uint8) float64 {
	la, lb := luminance(a), luminance(b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}

// luminance is WCAG 2.1's relative luminance of an sRGB colour.
func luminance(c [3]uint8) float64 {
	lin := func(v uint8) float64 {
		f := float64(v) / 255
		if f <= 0.04045 {
			return f / 12.92
		}
		return math.Pow((f+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(c[0]) + 0.7152*lin(c[1]) + 0.0722*lin(c[2])
}
