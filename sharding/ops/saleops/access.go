package saleops

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"flashsale/sharding"
	"flashsale/sharding/draw"
	"flashsale/sharding/draw/beacon"
	"flashsale/sharding/ops/tool"
	"flashsale/sharding/sale"
	"flashsale/sharding/stock"
	"flashsale/writer/schema"
)

// errDrawInFile refuses a sale file that names its draw.
var errDrawInFile = errors.New(`draw is not part of a sale file: ` +
	"`flashctl sale create` draws the seed of a queue's or raffle's draw and publishes its commitment itself; drop the field")

// Secrets are the secret halves of a new sale's draw: the seed (hex) whose
// commitment the sale publishes, and the key that signs its tree head.
type Secrets struct {
	Seed string
	Head ed25519.PrivateKey
}

// DefaultChain is the beacon chain a new sale's draw is sealed by: the
// environment's FLASHSALE_BEACON ("quicknet", the default; "dev", the local
// stack's; "none", the seed alone), as `sale create --beacon` defaults.
func DefaultChain() (*beacon.Chain, error) { return ChainNamed(os.Getenv("FLASHSALE_BEACON")) }

// ChainNamed is DefaultChain for name ("" is quicknet; "none" is nil).
func ChainNamed(name string) (*beacon.Chain, error) {
	switch name {
	case "":
		return beacon.Quicknet, nil
	case "none":
		return nil, nil
	}
	return beacon.ByName(name)
}

// NewDraw draws the secrets of s's draw and sets s.Draw to their public
// halves: the seed's commitment and, with a chain, the round that seals the
// draw (chain.RoundFor the entries' close) and the head key. It returns no
// secrets when s draws nothing or has its Draw already (a finished create
// keeps the stored one).
func NewDraw(s *sale.Sale, chain *beacon.Chain) Secrets {
	if !s.Drawn() || s.Draw != nil {
		return Secrets{}
	}
	seed := draw.NewSeed()
	s.Draw = &sale.DrawCommitment{Commitment: draw.Commitment(seed).String()}
	sec := Secrets{Seed: seed.String()}
	if chain != nil {
		sec.Head = draw.NewHeadKey()
		s.Draw.Chain, s.Draw.Round = chain.Hash, chain.RoundFor(s.EntriesClose())
		s.Draw.HeadKey = hex.EncodeToString(sec.Head.Public().(ed25519.PublicKey))
	}
	return sec
}

// PutAccessKeys writes s's draw secrets (from NewDraw) and presale cap to
// Redis, before its description, logs the draw's commitment, and returns the
// secrets Redis holds (empty for a sale without a draw). A seed already there
// (left by a create that stopped before the description was written, so
// nobody saw its commitment) is kept and s.Draw committed to it, as is a
// head key; without secrets, the stored seed must match s.Draw.
func PutAccessKeys(ctx context.Context, rs *stock.Store, s *sale.Sale, sec Secrets) (schema.DrawSecrets, error) {
	at := tool.AccessExpiry(s)
	var held schema.DrawSecrets
	if sec.Seed != "" {
		var err error
		if held.Seed, err = rs.PutDrawSeed(ctx, s.ID, sec.Seed, at); err != nil {
			return held, err
		}
		h, err := draw.ParseHash(held.Seed)
		if err != nil || h.String() != held.Seed {
			return held, fmt.Errorf("sale %d: %s holds %q, not a seed (64 lower-case hex digits): delete the key, then create the sale again", s.ID, sharding.RoomSeedKey(s.ID), held.Seed)
		}
		s.Draw.Commitment = draw.Commitment(h).String()
		if sec.Head != nil {
			k, err := rs.PutDrawHeadKey(ctx, s.ID, sec.Head, at)
			if err != nil {
				return held, err
			}
			s.Draw.HeadKey, held.HeadKey = hex.EncodeToString(k.Public().(ed25519.PublicKey)), hex.EncodeToString(k.Seed())
		}
	} else if s.Draw != nil {
		var err error
		if held.Seed, err = checkStoredSeed(ctx, rs, s); err != nil {
			return held, err
		}
		if s.Draw.HeadKey != "" {
			k, err := rs.DrawHeadKey(ctx, s.ID)
			if err != nil {
				return held, err
			}
			held.HeadKey = hex.EncodeToString(k.Seed())
		}
	}
	if d := s.Draw; d != nil {
		e := &draw.Event{Event: draw.EventCommit, At: time.Now().UnixMilli(), Commitment: d.Commitment, Chain: d.Chain, Round: d.Round, HeadKey: d.HeadKey}
		if _, _, err := rs.LogDrawEvent(ctx, s.ID, e, at); err != nil {
			return held, err
		}
	}
	if p := s.Presale; p != nil && p.Cap > 0 {
		return held, rs.PutPresaleCap(ctx, s.ID, p.Cap, at)
	}
	return held, nil
}

// checkStoredSeed checks that the seed in Redis is the one s.Draw commits to,
// and returns it: without it, the draw could never be revealed as committed.
func checkStoredSeed(ctx context.Context, rs *stock.Store, s *sale.Sale) (string, error) {
	held, found, err := rs.DrawSeed(ctx, s.ID)
	if err != nil {
		return "", err
	}
	h, perr := draw.ParseHash(held)
	if !found || perr != nil || draw.Commitment(h).String() != s.Draw.Commitment {
		return "", fmt.Errorf("sale %d: the seed its description commits to (%s) is not in Redis (%s): its draw could never be revealed as committed; pick another id",
			s.ID, s.Draw.Commitment, sharding.RoomSeedKey(s.ID))
	}
	return held, nil
}

// PresaleShown is the presale of `sale show`.
type PresaleShown struct {
	StartsAt time.Time `json:"startsAt"`
	Claim    string    `json:"claim,omitempty"`
	Values   []string  `json:"values,omitempty"`
	List     bool      `json:"list"`
	// Listed is how many user ids the list holds (`sale presale load`).
	Listed int64 `json:"listed,omitempty"`
	Cap    int64 `json:"cap,omitempty"` // units over all items; 0: no cap
	// CapLeft is the units the presale may still sell, from Redis; nil
	// without a cap, or when the key is missing (a warning says so).
	CapLeft *int64 `json:"capLeft,omitempty"`
}

// showAccess adds s's access mode, raffle window, draw commitment and
// presale to rep; what it cannot read from Redis becomes a warning.
func showAccess(ctx context.Context, t *tool.Tool, s *sale.Sale, rep *SaleShown) {
	rep.Access, rep.Raffle = s.Mode(), s.Raffle
	if s.Draw != nil {
		rep.Commitment = s.Draw.Commitment
	}
	p := s.Presale
	if p == nil {
		return
	}
	ps := &PresaleShown{StartsAt: p.StartsAt.UTC(), Claim: p.Claim, Values: p.Values, List: p.List, Cap: p.Cap}
	rep.Presale = ps
	if p.List {
		n, err := t.Store.PresaleListSize(ctx, s.ID)
		if err != nil {
			rep.Warnings = append(rep.Warnings, err.Error())
		}
		ps.Listed = n
	}
	if p.Cap <= 0 {
		return
	}
	left, found, err := t.Store.PresaleCapLeft(ctx, s.ID)
	switch {
	case err != nil:
		rep.Warnings = append(rep.Warnings, err.Error())
	case !found:
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("the presale cap key %s is missing (expired, or deleted): the gateways sell nothing more in the presale",
			sharding.PresaleCapKey(s.ID)))
	default:
		ps.CapLeft = &left
	}
}

// accessText renders the access lines of `sale show`.
func (r *SaleShown) accessText(w io.Writer) {
	fmt.Fprintf(w, "access %s", r.Access)
	if r.Raffle != nil {
		fmt.Fprintf(w, ", entries %s .. %s", r.Raffle.EntriesOpen.UTC().Format(time.RFC3339), r.Raffle.EntriesClose.UTC().Format(time.RFC3339))
	}
	switch {
	case r.Commitment != "":
		fmt.Fprintf(w, ", draw commitment %s", r.Commitment)
	case r.Access != sale.AccessOpen:
		fmt.Fprint(w, ", no draw commitment (created without one: the seed drawn at the freeze is not verifiable)")
	}
	fmt.Fprintln(w)
	if p := r.Presale; p != nil {
		fmt.Fprintf(w, "presale from %s: %s\n", p.StartsAt.Format(time.RFC3339), p.who())
	}
}

// who says who may buy in the presale, and how much is left of its cap.
func (p *PresaleShown) who() string {
	var parts []string
	if p.Claim != "" {
		parts = append(parts, fmt.Sprintf("claim %s in [%s]", p.Claim, strings.Join(p.Values, ", ")))
	}
	list := "list no"
	if p.List {
		list = fmt.Sprintf("list yes (%d users loaded)", p.Listed)
	}
	parts = append(parts, list)
	switch {
	case p.Cap <= 0:
		parts = append(parts, "no cap")
	case p.CapLeft == nil:
		parts = append(parts, fmt.Sprintf("cap %d, left ?", p.Cap))
	default:
		parts = append(parts, fmt.Sprintf("cap %d, left %d", p.Cap, *p.CapLeft))
	}
	return strings.Join(parts, "; ")
}
