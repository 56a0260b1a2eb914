package draw

import (
	"encoding/hex"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"flashsale/sharding/draw/beacon"
)

// TestWorkedExample recomputes the package doc's worked example from the
// doc's own text, so a checker written from the doc reproduces a draw: the
// byte layout lived only in the page script's comment, and a checker
// written from the docs could not reproduce one (issue 59).
func TestWorkedExample(t *testing.T) {
	src, err := os.ReadFile("draw.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src[:strings.Index(string(src), "package draw")])
	want := map[string]string{}
	places := map[string]int{}
	line := regexp.MustCompile(`(?m)^//\t([a-z]+(?: 4[23]| id)?) +=  ?([0-9a-f]{64})(?:  (?:place (\d)|.*))?$`)
	for _, m := range line.FindAllStringSubmatch(doc, -1) {
		want[m[1]] = m[2]
		if m[3] != "" {
			places[m[1]], _ = strconv.Atoi(m[3])
		}
	}
	sigHex := regexp.MustCompile(`signature is\n// ([0-9a-f]{96})\.`).FindStringSubmatch(doc)
	if len(want) != 9 || len(places) != 2 || sigHex == nil {
		t.Fatalf("the worked example is not in the doc as expected: %d values %v, places %v, signature %v", len(want), want, places, sigHex)
	}
	var nonce Nonce
	for i := range nonce {
		nonce[i] = byte(i)
	}
	var seed Hash
	for i := range seed {
		seed[i] = 0x11
	}
	sig, _ := hex.DecodeString(sigHex[1])
	if err := beacon.Quicknet.Verify(1000, sig); err != nil {
		t.Fatalf("the example's round: %v", err)
	}
	l42, l43 := Leaf(7, 42, nonce), Leaf(7, 43, nonce)
	leaves := []Hash{l42, l43}
	Sort(leaves)
	root := Root(leaves)
	rnd := Hash(beacon.Randomness(sig))
	key := Key(seed, rnd)
	draws, ps := Places(key, root, leaves)
	got := map[string]string{"commitment": Commitment(seed).String(), "leaf 42": l42.String(), "leaf 43": l43.String(),
		"root": root.String(), "randomness": rnd.String(), "key": key.String()}
	gotPlace := map[string]int{}
	for i, l := range leaves {
		name := map[Hash]string{l42: "draw 42", l43: "draw 43"}[l]
		got[name], gotPlace[name] = draws[i].String(), ps[i]
	}
	got["draw id"] = ID(7, time.UnixMilli(1692806334000), &Published{Count: 2, Root: root, Seed: seed, Beacon: &Beacon{Chain: beacon.ChainHash, Round: 1000, Signature: sig}}).String()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: the doc says %s, computed %s", k, v, got[k])
		}
	}
	for k, v := range places {
		if gotPlace[k] != v {
			t.Errorf("%s: the doc says place %d, computed %d", k, v, gotPlace[k])
		}
	}
	p := &Published{Commitment: Commitment(seed), Seed: seed, Root: root, Count: 2, Leaves: leaves, Draws: draws, Places: ps,
		Beacon: &Beacon{Chain: beacon.ChainHash, Round: 1000, Signature: sig}}
	if err := Verify(p); err != nil {
		t.Fatalf("the example does not verify: %v", err)
	}
	p.Beacon.Round = 1001
	if err := Verify(p); err == nil {
		t.Fatal("the example verified with round 1000's signature as round 1001's")
	}
}
