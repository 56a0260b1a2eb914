// Package page is the sale page (SPEC, "The front door"): plain HTML, CSS and
// a small script, embedded with go:embed and served by package httpapi at
// GET /sale/{saleId}.
//
// The same bytes go to every user, so a CDN can cache them: nothing in the
// HTML depends on the user or the sale (the script reads the sale id from the
// URL and everything else from the public API). The HTML names its assets by
// content hash (/sale/assets/sale.<hash>.js), so they are served with
// "immutable" and a year's max-age, while the HTML itself gets a short
// public max-age and an ETag. The only inputs are gateway flags: where the
// shop keeps the buyer's bearer token (-page-token) and whether the
// development sign-in is offered (-dev), written as data attributes of the
// <html> element; two gateways with the same flags serve identical bytes.
//
// Everything is computed once in New; serving a page or an asset is a map
// read and allocates nothing.
package page

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html"
	"path"
	"strconv"
	"strings"
	"time"
)

//go:embed assets
var files embed.FS

// AssetPrefix is the path under which the hashed assets are served.
const AssetPrefix = "/sale/assets/"

// Config is what the page depends on, all of it gateway flags.
type Config struct {
	// Token is where the shop keeps the buyer's bearer token:
	// "localStorage:<key>" or "cookie:<name>" (config.ValidPageToken).
	Token string
	// Dev offers the development sign-in (POST /api/flash-sales/dev/token).
	Dev bool
	// MaxAge is the HTML's Cache-Control max-age (default 60s).
	MaxAge time.Duration
}

// Asset is one response: body and headers, immutable and shared.
type Asset struct {
	Name         string // path it is served at
	Body         []byte
	ContentType  []byte
	ETag         []byte // strong, quoted
	CacheControl []byte
}

// Site holds the page and its assets.
type Site struct {
	page   *Asset
	assets map[string]*Asset // by name under AssetPrefix
	other  []otherRelease    // one per asset, for another release's hash
}

// otherRelease answers an asset name with a content hash that is not this
// build's: in a rolling deploy a page from one release (from a CDN, or from
// another gateway) asks a gateway of the other for its assets. A 404 there
// would leave the buyer a page without its script; the current asset,
// revalidated every time (no-cache, this content's ETag), keeps the page
// working, and no cache keeps it under the wrong name once the deploy is done.
type otherRelease struct {
	prefix, ext string // "sale.", ".js"
	asset       *Asset
}

// hashLen is the length of the content hash in an asset's name (6 bytes, hex).
const hashLen = 12

var types = map[string]string{
	".css": "text/css; charset=utf-8",
	".js":  "text/javascript; charset=utf-8",
}

// immutable is the Cache-Control of a content-hashed asset; revalidate that
// of an asset asked for by another release's hash.
var (
	immutable  = []byte("public, max-age=31536000, immutable")
	revalidate = []byte("public, no-cache")
)

// New renders the page for cfg.
func New(cfg Config) (*Site, error) {
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = 60 * time.Second
	}
	s := &Site{assets: map[string]*Asset{}}
	names := map[string]string{} // source file -> served path
	// The worker first: the page's script does not name it, the HTML does.
	for _, f := range []string{"pow-worker.js", "sale.css", "sale.js"} {
		body, err := files.ReadFile("assets/" + f)
		if err != nil {
			return nil, fmt.Errorf("sale page asset %s: %w", f, err)
		}
		sum := sha256.Sum256(body)
		ext := path.Ext(f)
		name := strings.TrimSuffix(f, ext) + "." + hex.EncodeToString(sum[:hashLen/2]) + ext
		s.assets[name] = &Asset{Name: AssetPrefix + name, Body: body, ContentType: []byte(types[ext]),
			ETag: etag(sum[:]), CacheControl: immutable}
		names[f] = AssetPrefix + name
		o := *s.assets[name]
		o.CacheControl = revalidate
		s.other = append(s.other, otherRelease{prefix: strings.TrimSuffix(f, ext) + ".", ext: ext, asset: &o})
	}
	tpl, err := files.ReadFile("assets/sale.html")
	if err != nil {
		return nil, fmt.Errorf("sale page: %w", err)
	}
	r := strings.NewReplacer(
		"{{token}}", html.EscapeString(cfg.Token),
		"{{dev}}", strconv.FormatBool(cfg.Dev),
		"{{css}}", names["sale.css"], "{{js}}", names["sale.js"], "{{worker}}", names["pow-worker.js"])
	body := []byte(r.Replace(string(tpl)))
	if i := bytes.Index(body, []byte("{{")); i >= 0 {
		return nil, fmt.Errorf("sale page: unknown placeholder at %q", body[i:min(i+20, len(body))])
	}
	sum := sha256.Sum256(body)
	s.page = &Asset{Name: "/sale/{saleId}", Body: body, ContentType: []byte("text/html; charset=utf-8"), ETag: etag(sum[:]),
		CacheControl: []byte("public, max-age=" + strconv.Itoa(int(cfg.MaxAge/time.Second)))}
	return s, nil
}

func etag(sum []byte) []byte { return []byte(`"` + hex.EncodeToString(sum[:12]) + `"`) }

// Page returns the sale page.
func (s *Site) Page() *Asset { return s.page }

// Asset returns the asset served as AssetPrefix+name, or nil. A name of
// this page's assets with another content hash (<base>.<12 hex>.<ext>) gets
// the current one, to be revalidated (see otherRelease). It allocates
// nothing.
func (s *Site) Asset(name []byte) *Asset {
	if a := s.assets[string(name)]; a != nil {
		return a
	}
	for i := range s.other {
		o := &s.other[i]
		n := len(o.prefix) + hashLen
		if len(name) == n+len(o.ext) && string(name[:len(o.prefix)]) == o.prefix &&
			string(name[n:]) == o.ext && isHex(name[len(o.prefix):n]) {
			return o.asset
		}
	}
	return nil
}

func isHex(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Assets returns every asset's served path, for tests and the README.
func (s *Site) Assets() []string {
	out := make([]string, 0, len(s.assets))
	for _, a := range s.assets {
		out = append(out, a.Name)
	}
	return out
}

// NotModified reports whether an If-None-Match header value names etag
// (a list of entity tags, weak ones compared weakly, or "*"). It allocates
// nothing.
func NotModified(ifNoneMatch, etag []byte) bool {
	for len(ifNoneMatch) > 0 {
		var tag []byte
		tag, ifNoneMatch, _ = bytes.Cut(ifNoneMatch, []byte(","))
		tag = bytes.TrimSpace(tag)
		tag = bytes.TrimPrefix(tag, []byte("W/"))
		if string(tag) == "*" || bytes.Equal(tag, etag) {
			return true
		}
	}
	return false
}

// Default returns the page with the default configuration: the token in
// local storage under "flashsale.token", no development sign-in.
func Default() *Site {
	s, err := New(Config{Token: "localStorage:flashsale.token"})
	if err != nil { // the embedded files are part of the binary
		panic(err)
	}
	return s
}
