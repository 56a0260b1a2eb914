package beacon

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// DefaultRelays are drand's public HTTP relays, tried in order.
var DefaultRelays = []string{"https://api.drand.sh", "https://api2.drand.sh", "https://api3.drand.sh", "https://drand.cloudflare.com"}

// Source gives a chain's round once it exists. Fetcher is the real one;
// every signature it returns has been verified against the chain's key.
type Source interface {
	Round(ctx context.Context, c *Chain, r uint64) ([]byte, error)
}

// ErrNotYet means the round's time has not come.
var ErrNotYet = errors.New("beacon: the round is not published yet")

// Fetcher takes rounds from drand's HTTP relays (GET {relay}/{chain
// hash}/public/{round}) and verifies each before returning it; with Dev set
// it signs the Dev chain's rounds itself, at their time, as a relay would.
type Fetcher struct {
	Relays []string
	Client *http.Client // default: a 5 s timeout
	Dev    bool         // sign Dev's rounds here (the local stack, tests)
	Now    func() time.Time
	// Refused, when set, hears of each relay's answer that is not the
	// chain's round (a forged or wrong round), even when another relay then
	// gives the real one: a relay that forges must reach an operator.
	Refused func(relay string, err error)
}

// Round returns round r of c, verified. A relay that answers a signature
// that does not verify is an error naming it, and the next relay is tried:
// every error is returned joined when none gave the round.
func (f *Fetcher) Round(ctx context.Context, c *Chain, r uint64) ([]byte, error) {
	now := time.Now
	if f.Now != nil {
		now = f.Now
	}
	if now().Before(c.TimeOf(r)) {
		return nil, fmt.Errorf("%w: %s round %d at %s", ErrNotYet, c.Name, r, c.TimeOf(r).UTC().Format(time.RFC3339))
	}
	if c == Dev {
		if !f.Dev {
			return nil, errors.New("beacon: a sale on the dev chain, and this process does not sign it (set -beacon-dev: the local stack only)")
		}
		return c.Sign(r)
	}
	if len(f.Relays) == 0 {
		return nil, fmt.Errorf("beacon: no relay configured for %s round %d: hand it over with flashctl sale draw beacon", c.Name, r)
	}
	var errs []error
	for _, relay := range f.Relays {
		sig, err := f.fromRelay(ctx, relay, c, r)
		if err == nil {
			return sig, nil
		}
		if errors.Is(err, ErrWrongRound) && f.Refused != nil {
			f.Refused(relay, err)
		}
		errs = append(errs, fmt.Errorf("%s: %w", relay, err))
	}
	return nil, errors.Join(errs...)
}

// relayRound is a relay's answer (drand's HTTP API v1).
type relayRound struct {
	Round     uint64 `json:"round"`
	Signature string `json:"signature"`
}

func (f *Fetcher) fromRelay(ctx context.Context, relay string, c *Chain, r uint64) ([]byte, error) {
	cl := f.Client
	if cl == nil {
		cl = &http.Client{Timeout: 5 * time.Second}
	}
	url := fmt.Sprintf("%s/%s/public/%d", strings.TrimRight(relay, "/"), c.Hash, r)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := cl.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return ParseRound(body, c, r)
}

// ErrWrongRound wraps a relay's answer that is a well-formed round but not
// the chain's round asked for: a signature that does not verify, or another
// round.
var ErrWrongRound = errors.New("beacon: the relay's answer is not the round asked for")

// ParseRound reads a relay's JSON answer for round r of c and verifies its
// signature: the randomness a relay states is ignored (it is SHA-256 of the
// signature, recomputed by Randomness).
func ParseRound(body []byte, c *Chain, r uint64) ([]byte, error) {
	var rr relayRound
	if err := json.Unmarshal(body, &rr); err != nil {
		return nil, fmt.Errorf("beacon: a relay's answer is not a round: %w", err)
	}
	if rr.Round != r {
		return nil, fmt.Errorf("%w: asked for round %d, the relay answered round %d", ErrWrongRound, r, rr.Round)
	}
	sig, err := ParseSignature(rr.Signature)
	if err != nil {
		return nil, err
	}
	if err := c.Verify(r, sig); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrWrongRound, err)
	}
	return sig, nil
}

// ParseSignature parses a round's signature: 96 hex digits.
func ParseSignature(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != SignatureSize {
		return nil, fmt.Errorf("beacon: signature %.20q…: want %d hex digits", s, 2*SignatureSize)
	}
	return b, nil
}
