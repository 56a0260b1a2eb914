package page

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html"
	"io/fs"
	"path"
	"regexp"
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
	// MaxAge is the HTML's Cache-Control max-age (default 60s), and the
	// media's.
	MaxAge time.Duration
	// Media is a directory of images served under MediaPrefix (see
	// loadMedia); "" serves none.
	Media string
}

// Asset is one response: body and headers, immutable and shared.
type Asset struct {
	Name         string // path it is served at
	Body         []byte
	ContentType  []byte
	ETag         []byte // strong, quoted
	CacheControl []byte
	// CSP is the asset's own Content-Security-Policy; nil for the page's
	// default one.
	CSP []byte
}

// Site holds the page and its assets.
type Site struct {
	page   *Asset
	assets map[string]*Asset // by name under AssetPrefix
	media  map[string]*Asset // by name under MediaPrefix
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
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".json": "application/json; charset=utf-8",
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
	maxAge := []byte("public, max-age=" + strconv.Itoa(int(cfg.MaxAge/time.Second)))
	s := &Site{assets: map[string]*Asset{}}
	names, err := s.hashAssets()
	if err != nil {
		return nil, err
	}
	switcher, err := languageSwitch(names)
	if err != nil {
		return nil, err
	}
	if s.media, err = loadMedia(cfg.Media, maxAge); err != nil {
		return nil, err
	}
	tpl, err := files.ReadFile("assets/sale.html")
	if err != nil {
		return nil, fmt.Errorf("sale page: %w", err)
	}
	body, err := render(tpl, names, strings.NewReplacer(
		"{{token}}", html.EscapeString(cfg.Token), "{{dev}}", strconv.FormatBool(cfg.Dev), "{{languages}}", switcher))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	s.page = &Asset{Name: "/sale/{saleId}", Body: body, ContentType: []byte("text/html; charset=utf-8"), ETag: etag(sum[:]),
		CacheControl: maxAge}
	return s, nil
}

// notServed are the files beside the assets that document them (a vendored
// script's README and licence): embedded with the folder, never served.
var notServed = map[string]bool{"README.md": true, "LICENSE": true}

// hashAssets names every embedded file but the HTML by its content hash
// (i18n/ja.json is served as i18n-ja.<hash>.json) and returns the served
// path of each, by source path.
func (s *Site) hashAssets() (map[string]string, error) {
	names := map[string]string{}
	err := fs.WalkDir(files, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == "assets/sale.html" || notServed[path.Base(p)] {
			return err
		}
		body, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		src := strings.TrimPrefix(p, "assets/")
		ext := path.Ext(src)
		if types[ext] == "" {
			return fmt.Errorf("sale page asset %s: no content type for %s", src, ext)
		}
		base := strings.ReplaceAll(strings.TrimSuffix(src, ext), "/", "-")
		sum := sha256.Sum256(body)
		name := base + "." + hex.EncodeToString(sum[:hashLen/2]) + ext
		a := &Asset{Name: AssetPrefix + name, Body: body, ContentType: []byte(types[ext]), ETag: etag(sum[:]), CacheControl: immutable}
		s.assets[name] = a
		names[src] = a.Name
		o := *a
		o.CacheControl = revalidate
		s.other = append(s.other, otherRelease{prefix: base + ".", ext: ext, asset: &o})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sale page assets: %w", err)
	}
	return names, nil
}

// assetRef is a placeholder naming an asset by its source path.
var assetRef = regexp.MustCompile(`\{\{asset:([^}]+)\}\}`)

// render fills the template's placeholders: {{asset:<source path>}} with
// the asset's served path, the others with r.
func render(tpl []byte, names map[string]string, r *strings.Replacer) ([]byte, error) {
	var missing string
	out := assetRef.ReplaceAllFunc(tpl, func(m []byte) []byte {
		src := string(assetRef.FindSubmatch(m)[1])
		if names[src] == "" {
			missing = src
		}
		return []byte(names[src])
	})
	if missing != "" {
		return nil, fmt.Errorf("sale page: no asset %s", missing)
	}
	out = []byte(r.Replace(string(out)))
	if i := bytes.Index(out, []byte("{{")); i >= 0 {
		return nil, fmt.Errorf("sale page: unknown placeholder at %q", out[i:min(i+20, len(out))])
	}
	return out, nil
}

func etag(sum []byte) []byte { return []byte(`"` + hex.EncodeToString(sum[:12]) + `"`) }

// Page returns the sale page.
func (s *Site) Page() *Asset { return s.page }

// AppendPageETag appends the ETag the page is served with under policy p
// (see Policy): the page's own when p is the default, else one that also
// names p, so a change of the sale's policy is not answered 304. It
// allocates nothing.
func (s *Site) AppendPageETag(dst []byte, p *Policy) []byte {
	if len(p.tag) == 0 {
		return append(dst, s.page.ETag...)
	}
	dst = append(dst, s.page.ETag[:len(s.page.ETag)-1]...)
	dst = append(dst, '-')
	dst = append(dst, p.tag...)
	return append(dst, '"')
}

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

// Media returns the image served as MediaPrefix+name, or nil. It allocates
// nothing.
func (s *Site) Media(name []byte) *Asset { return s.media[string(name)] }

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
