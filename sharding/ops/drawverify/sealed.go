package drawverify

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"flashsale/sharding/draw"
	"flashsale/sharding/draw/beacon"
	"flashsale/sharding/ops/tool"
)

// BeaconJSON is the beacon round of a sealed draw as GET .../draw serves
// it: the chain and round fixed at the sale's creation and, once recorded,
// the round's signature.
type BeaconJSON struct {
	Chain     string `json:"chain"`
	Name      string `json:"name,omitempty"`
	Round     uint64 `json:"round"`
	At        string `json:"at,omitempty"`
	Signature string `json:"signature,omitempty"`
}

// HeadJSON is a signed tree head (draw.Head) as the gateways serve it.
type HeadJSON struct {
	Sale       int64  `json:"sale"`
	Count      int    `json:"count"`
	Root       string `json:"root"`
	FrozenAtMs int64  `json:"frozenAtMs"`
	Chain      string `json:"chain"`
	Round      uint64 `json:"round"`
	Signature  string `json:"signature"`
}

// LogPage is the body of GET .../draw/log: every entry of the sale's draw
// log, each body the exact text its hash covers.
type LogPage struct {
	SaleID  int64      `json:"saleId"`
	Entries []LogEntry `json:"entries"`
}

// LogEntry is one entry of a LogPage.
type LogEntry struct {
	Hash string `json:"hash"`
	Body string `json:"body"`
}

// Head parses h: the head and its signature.
func (h *HeadJSON) Head() (*draw.Head, []byte, error) {
	root, err := draw.ParseHash(h.Root)
	if err != nil {
		return nil, nil, fmt.Errorf("head root: %w", err)
	}
	sig, err := hex.DecodeString(h.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, nil, fmt.Errorf("head signature %.16q…: want %d hex digits", h.Signature, 2*ed25519.SignatureSize)
	}
	return &draw.Head{Sale: h.Sale, Count: h.Count, Root: root, FrozenAt: time.UnixMilli(h.FrozenAtMs), Chain: h.Chain, Round: h.Round}, sig, nil
}

// entries parses the log's entries.
func (l *LogPage) entries() ([]draw.Entry, error) {
	out := make([]draw.Entry, len(l.Entries))
	for i, e := range l.Entries {
		h, err := draw.ParseHash(e.Hash)
		if err != nil {
			return nil, fmt.Errorf("log entry %d: %w", i, err)
		}
		out[i] = draw.Entry{Hash: h, Body: []byte(e.Body)}
	}
	return out, nil
}

// checkBeacon checks doc's beacon round: its signature against its chain's
// pinned key. It returns the draw's beacon for draw.Verify (nil for a draw
// on the seed alone, which rep says is not sealed).
func checkBeacon(doc *DrawPage, rep *DrawVerified) (*draw.Beacon, error) {
	b := doc.Beacon
	if b == nil {
		rep.Sealed = "no: the sale fixed no beacon round at its creation; its draw rests on the seed alone, which the shop knew before the freeze"
		return nil, nil
	}
	c, err := beacon.ByHash(b.Chain)
	if err != nil {
		return nil, err
	}
	sig, err := beacon.ParseSignature(b.Signature)
	if err != nil {
		return nil, fmt.Errorf("the beacon round %d: %w", b.Round, err)
	}
	if err := c.Verify(b.Round, sig); err != nil {
		return nil, fmt.Errorf("the beacon round %d: %w: a forged round", b.Round, err)
	}
	rep.Sealed = fmt.Sprintf("yes: %s round %d (%s)", c.Name, b.Round, c.TimeOf(b.Round).UTC().Format(time.RFC3339))
	if !c.Public {
		rep.Sealed += "; " + c.Name + " is a test chain anyone can sign: this draw proves nothing against its operator"
	}
	return &draw.Beacon{Chain: b.Chain, Round: b.Round, Signature: sig}, nil
}

// checkWitness checks, for a sealed draw, the tree head's signature under
// the sale's head key, its time before the round's and that it is the
// draw's; and, with log, the log's chain and rules and that it tells the
// same draw.
func checkWitness(doc *DrawPage, log *LogPage, rep *DrawVerified) error {
	var hsig []byte
	if b := doc.Beacon; b != nil {
		if doc.Head == nil {
			return errors.New("a sealed draw without its signed tree head")
		}
		h, sig, err := doc.Head.Head()
		if err != nil {
			return err
		}
		key, err := hex.DecodeString(doc.HeadKey)
		if err != nil || len(key) != ed25519.PublicKeySize {
			return fmt.Errorf("head key %q: want %d hex digits", doc.HeadKey, 2*ed25519.PublicKeySize)
		}
		if err := draw.VerifyHead(key, h, sig); err != nil {
			return err
		}
		if h.Sale != doc.SaleID || h.Count != doc.Count || h.Root.String() != doc.Root || h.Chain != b.Chain || h.Round != b.Round {
			return fmt.Errorf("the tree head (sale %d, %d entrants, root %s, round %d) is not the draw's (sale %d, %d, %s, round %d)",
				h.Sale, h.Count, h.Root, h.Round, doc.SaleID, doc.Count, doc.Root, b.Round)
		}
		rep.Sealed += ", tree head frozen at " + h.FrozenAt.UTC().Format(time.RFC3339Nano)
		hsig = sig
	}
	if log == nil {
		rep.Log = "not checked: no log read"
		return nil
	}
	st, err := checkLog(doc, log, hsig)
	if err != nil {
		return err
	}
	rep.Log = fmt.Sprintf("%d entries, chained, in order, telling this draw", len(log.Entries))
	if len(st.Aborts) > 0 {
		rep.Log += fmt.Sprintf("; aborted and redrawn %d time(s): %s", len(st.Aborts), strings.Join(st.Aborts, "; "))
	}
	return nil
}

// checkLog checks log's chain and rules, and that it tells doc's draw: the
// commitment, round and head key of the creation, the root, count and head
// signature of the freeze, the beacon's signature and the revealed seed.
func checkLog(doc *DrawPage, log *LogPage, headSig []byte) (*draw.LogState, error) {
	if log.SaleID != doc.SaleID {
		return nil, fmt.Errorf("the log read is of sale %d, the draw of sale %d", log.SaleID, doc.SaleID)
	}
	en, err := log.entries()
	if err != nil {
		return nil, err
	}
	st, err := draw.CheckLog(doc.SaleID, en)
	if err != nil {
		return nil, err
	}
	mismatch := func(what, logged, served string) error {
		return fmt.Errorf("%w: the log's %s is %s, the draw's %s", draw.ErrLog, what, logged, served)
	}
	c := st.Commit
	switch {
	case c == nil || st.Freeze == nil || st.Reveal == nil:
		return nil, fmt.Errorf("%w: the log stops before the reveal (%d entries)", draw.ErrLog, len(en))
	case doc.Commitment == nil || c.Commitment != *doc.Commitment:
		return nil, mismatch("commitment", c.Commitment, hexOrNull(doc.Commitment))
	case st.Freeze.Root != doc.Root || *st.Freeze.Count != doc.Count:
		return nil, mismatch("freeze", fmt.Sprintf("root %s of %d", st.Freeze.Root, *st.Freeze.Count), fmt.Sprintf("root %s of %d", doc.Root, doc.Count))
	case st.Reveal.Seed != doc.Seed:
		return nil, mismatch("seed", st.Reveal.Seed, doc.Seed)
	}
	if b := doc.Beacon; b != nil {
		switch {
		case c.Chain != b.Chain || c.Round != b.Round || c.HeadKey != doc.HeadKey:
			return nil, mismatch("commitment entry", fmt.Sprintf("round %d of %s, head key %s", c.Round, c.Chain, c.HeadKey),
				fmt.Sprintf("round %d of %s, head key %s", b.Round, b.Chain, doc.HeadKey))
		case st.Beacon == nil || st.Beacon.Signature != b.Signature:
			return nil, mismatch("beacon", "another signature", b.Signature)
		case st.Freeze.HeadSig != hex.EncodeToString(headSig) || st.Freeze.FrozenAt != doc.Head.FrozenAtMs:
			return nil, mismatch("freeze's head", st.Freeze.HeadSig, doc.Head.Signature)
		}
	} else if c.Round != 0 {
		return nil, fmt.Errorf("%w: the log commits to round %d, the draw names no beacon", draw.ErrLog, c.Round)
	}
	return st, nil
}

// FetchLog reads sale id's draw log from the gateway at base.
func FetchLog(ctx context.Context, c *http.Client, base string, id int64) (*LogPage, error) {
	u := base + "/api/flash-sales/sales/" + strconv.FormatInt(id, 10) + "/draw/log"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("asking the gateway for the draw log of sale %d: %w", id, err)
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, maxDrawPage)
	if resp.StatusCode != http.StatusOK {
		return nil, drawRefusal(resp.StatusCode, body, u, id)
	}
	var l LogPage
	if err := json.NewDecoder(body).Decode(&l); err != nil {
		return nil, fmt.Errorf("GET %s: the answer is not a draw log: %w", u, err)
	}
	return &l, nil
}

// ReadLogFile reads a saved draw log (the body of GET .../draw/log).
func ReadLogFile(path string) (*LogPage, error) {
	in := tool.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("reading the draw log: %w", err)
		}
		defer f.Close()
		in = f
	}
	var l LogPage
	if err := json.NewDecoder(in).Decode(&l); err != nil {
		return nil, fmt.Errorf("reading the draw log from %s: %w", path, err)
	}
	return &l, nil
}
