package page

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"flashsale/sharding/draw/beacon"
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

// TestDrawPinsTheBeaconChains: draw.js pins each chain of package beacon,
// with its key, genesis, period and name, and says which one is the test
// chain.
func TestDrawPinsTheBeaconChains(t *testing.T) {
	src, err := files.ReadFile("assets/draw.js")
	if err != nil {
		t.Fatal(err)
	}
	entry := regexp.MustCompile(`'([0-9a-f]{64})': \{\s*key: '([0-9a-f]{192})',\s*genesis: (\d+), period: (\d+), dev: (true|false), name: '(\w+)',`)
	found := entry.FindAllStringSubmatch(string(src), -1)
	if len(found) != len(beacon.Chains) {
		t.Fatalf("draw.js pins %d chains, package beacon %d", len(found), len(beacon.Chains))
	}
	for _, m := range found {
		c, err := beacon.ByHash(m[1])
		if err != nil {
			t.Fatalf("draw.js: %v", err)
		}
		g, _ := strconv.ParseInt(m[3], 10, 64)
		p, _ := strconv.ParseInt(m[4], 10, 64)
		if m[2] != c.PublicKeyHex || g != c.Genesis.Unix() || p*1e9 != int64(c.Period) || (m[5] == "true") != !c.Public || m[6] != c.Name {
			t.Errorf("draw.js pins %s as key %s, genesis %d, period %d s, dev %s, name %s; package beacon: %s, %d, %v, public %v, %s",
				c.Name, m[2], g, p, m[5], m[6], c.PublicKeyHex, c.Genesis.Unix(), c.Period, c.Public, c.Name)
		}
	}
}
