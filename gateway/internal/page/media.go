package page

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MediaPrefix is the path under which the images of Config.Media are
// served: a sale file names them as paths on the page's own site
// (/sale/media/logo.svg), which the page's policy allows.
const MediaPrefix = "/sale/media/"

// mediaTypes are the image files a media directory may hold.
var mediaTypes = map[string]string{
	".svg": "image/svg+xml", ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
	".webp": "image/webp", ".gif": "image/gif", ".avif": "image/avif",
}

// Bounds of a media directory: it is read into memory at start.
const (
	maxMediaFile  = 4 << 20
	maxMediaTotal = 32 << 20
)

// mediaCSP is the policy of a media response: an image, never a document
// that runs anything (an SVG opened on its own stays inert).
var mediaCSP = []byte("default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox")

// loadMedia reads the images of dir (not its subdirectories; dot files are
// left out) once, at start: a shop's logo and item pictures served by the
// gateway itself, for a sale whose images are not on a CDN of the shop's.
// They are served with the page's max-age and an ETag of their content;
// a changed file is served after a restart. Anything but an image of
// mediaTypes is an error, so a wrong directory is noticed at start.
func loadMedia(dir string, cacheControl []byte) (map[string]*Asset, error) {
	out := map[string]*Asset{}
	if dir == "" {
		return out, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("page media: %w", err)
	}
	total := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") {
			continue
		}
		typ := mediaTypes[strings.ToLower(filepath.Ext(name))]
		if typ == "" || !validMediaName(name) {
			return nil, fmt.Errorf("page media %s: want an image named [A-Za-z0-9._-] (.svg, .png, .jpg, .webp, .gif, .avif)", filepath.Join(dir, name))
		}
		body, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("page media: %w", err)
		}
		if total += len(body); len(body) > maxMediaFile || total > maxMediaTotal {
			return nil, fmt.Errorf("page media %s: over %d bytes a file or %d in all", filepath.Join(dir, name), maxMediaFile, maxMediaTotal)
		}
		sum := sha256.Sum256(body)
		out[name] = &Asset{Name: MediaPrefix + name, Body: body, ContentType: []byte(typ), ETag: etag(sum[:]),
			CacheControl: cacheControl, CSP: mediaCSP}
	}
	return out, nil
}

func validMediaName(name string) bool {
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
