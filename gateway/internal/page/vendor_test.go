package page

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// The vendored @noble/curves (assets/vendor, see its README): Ed25519 and
// BLS12-381 for draw.js's check of the tree head and the beacon round.
const (
	nobleVersion = "2.4.0"
	nobleSHA256  = "1c9ecf8ed9854b07288ca1ec1c7f79c70cf0342d86d798cdb806381a42b001a2"
	noblePath    = "assets/vendor/noble-curves.min.js"
)

// TestNobleCurvesIsTheVendoredBuild: the vendored file is the build its
// README describes, of the version it names, and the page serves it.
func TestNobleCurvesIsTheVendoredBuild(t *testing.T) {
	src, err := files.ReadFile(noblePath)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	if got := hex.EncodeToString(sum[:]); got != nobleSHA256 || !strings.HasPrefix(string(src), "/*! @noble/curves "+nobleVersion+" ") {
		t.Fatalf("%s: sha256 %s, want the build of @noble/curves %s, %s", noblePath, got, nobleVersion, nobleSHA256)
	}
	readme, err := files.ReadFile("assets/vendor/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"@noble/curves@" + nobleVersion, nobleSHA256} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("assets/vendor/README.md does not name %s", want)
		}
	}
	s := Default()
	served := ""
	for _, a := range s.Assets() {
		if strings.HasPrefix(a, AssetPrefix+"vendor-noble-curves.min.") {
			served = a
		}
		if strings.Contains(a, "README") || strings.Contains(a, "LICENSE") {
			t.Errorf("the page serves %s", a)
		}
	}
	page := string(s.Page().Body)
	curves, drawJS := strings.Index(page, `<script src="`+served+`"`), strings.Index(page, `<script src="/sale/assets/draw.`)
	if served == "" || curves < 0 || drawJS < 0 || curves > drawJS {
		t.Fatalf("the page does not load %s (served as %q) before draw.js", noblePath, served)
	}
}
