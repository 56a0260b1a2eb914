package sale

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"flashsale/sharding/draw/beacon"
)

// Access modes of a sale (SPEC "Fair access"; the sale file's "access").
const (
	// AccessOpen: no waiting room; the ticket, when the sale asks for one,
	// is handed out at once from the start.
	AccessOpen = "open"
	// AccessQueue: the waiting room (Room): a pre-queue and start window
	// ordered by the verifiable draw, then arrival order.
	AccessQueue = "queue"
	// AccessRaffle: entries during a registration window that closes before
	// the start; the verifiable draw orders the entrants; the first places,
	// one per unit, are admitted from the start and the others are told
	// NOT_SELECTED.
	AccessRaffle = "raffle"
)

// Raffle is the registration window of a raffle (the sale file's "raffle").
type Raffle struct {
	EntriesOpen  time.Time `json:"entriesOpen"`
	EntriesClose time.Time `json:"entriesClose"`
}

// DrawCommitment is the public half of a sale's verifiable draw (package
// draw): the SHA-256 of the secret seed, in hex, written by `flashctl sale
// create` for a queue or raffle sale. The seed itself is kept in Redis
// (RoomSeedKey) until the draw reveals it.
//
// A sale created since issue 59 also names the beacon round that seals its
// draw (Chain, Round: the first round of a pinned chain at least its Lead
// after the entries close) and the public Ed25519 key that signs its tree
// head; a sale without them is drawn on its seed alone, and every checker
// says so.
type DrawCommitment struct {
	Commitment string `json:"commitment"`
	Chain      string `json:"chain,omitempty"`
	Round      uint64 `json:"round,omitempty"`
	HeadKey    string `json:"headKey,omitempty"`
}

// Presale is a phase before the general sale open only to some buyers (the
// sale file's "presale"): tokens carrying Claim with one of Values, or the
// user ids an operator loaded with `flashctl sale presale load` when List.
// Cap, when > 0, bounds the units the phase may sell over all items.
type Presale struct {
	StartsAt time.Time `json:"startsAt"`
	Claim    string    `json:"claim,omitempty"`
	Values   []string  `json:"values,omitempty"`
	List     bool      `json:"list,omitempty"`
	Cap      int64     `json:"cap,omitempty"`
}

// Bounds of the access fields.
const (
	MaxPresaleValues = 16
	MaxRaffleEntries = 30 * 24 * time.Hour
)

// claimName is what a presale's claim may be called: a JWT claim name
// without quoting trouble.
var claimName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$`)

// Mode returns the sale's access mode: Access when set, else queue when
// the sale has a waiting room, else open.
func (s *Sale) Mode() string {
	switch {
	case s.Access != "":
		return s.Access
	case s.WaitingRoom != nil:
		return AccessQueue
	}
	return AccessOpen
}

// Drawn reports whether the sale's places come from the verifiable draw.
func (s *Sale) Drawn() bool { m := s.Mode(); return m == AccessQueue || m == AccessRaffle }

// Quantity returns the sale's units over all items.
func (s *Sale) Quantity() int64 {
	var q int64
	for _, it := range s.Items {
		q += it.Quantity
	}
	return q
}

// InPresale reports whether t lies in the sale's presale phase.
func (s *Sale) InPresale(t time.Time) bool {
	p := s.Presale
	return p != nil && !t.Before(p.StartsAt) && t.Before(s.StartsAt)
}

// Opens returns when the sale's first phase starts: the presale's start
// when it has one, else StartsAt.
func (s *Sale) Opens() time.Time {
	if s.Presale != nil {
		return s.Presale.StartsAt
	}
	return s.StartsAt
}

func (s *Sale) validateAccess() error {
	switch s.Access {
	case "", AccessOpen, AccessQueue, AccessRaffle:
	default:
		return fmt.Errorf("access %q: want %s, %s or %s", s.Access, AccessOpen, AccessQueue, AccessRaffle)
	}
	mode := s.Mode()
	if mode == AccessOpen && s.WaitingRoom != nil {
		return errors.New(`access "open" with a waitingRoom: drop one of them`)
	}
	if mode != AccessOpen && !s.TicketRequired {
		return fmt.Errorf("access %q needs ticketRequired: true (without it a purchase needs no ticket, so nobody waits)", mode)
	}
	if err := s.validateRaffle(mode); err != nil {
		return err
	}
	if d := s.Draw; d != nil {
		if mode == AccessOpen {
			return errors.New(`draw: an "open" sale draws nothing`)
		}
		if !hex64.MatchString(d.Commitment) {
			return fmt.Errorf("draw.commitment %q: want 64 lower-case hex digits (SHA-256 of the seed)", d.Commitment)
		}
		if err := s.validateBeacon(d); err != nil {
			return err
		}
	}
	return s.validatePresale()
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// EntriesClose returns when the entries of a queue or raffle close: a
// raffle's registration window's end, else the start window's end.
func (s *Sale) EntriesClose() time.Time {
	if s.Mode() == AccessRaffle && s.Raffle != nil {
		return s.Raffle.EntriesClose
	}
	w := DefaultStartWindow
	if s.WaitingRoom != nil {
		w = s.WaitingRoom.Window()
	}
	return s.StartsAt.Add(w)
}

// validateBeacon checks the beacon round of d: a pinned chain, a round at
// least the chain's Lead after the entries close, and, for a raffle, out by
// the start (its first places are admitted then).
func (s *Sale) validateBeacon(d *DrawCommitment) error {
	if d.Round == 0 && d.Chain == "" && d.HeadKey == "" {
		return nil // drawn on the seed alone
	}
	c, err := beacon.ByHash(d.Chain)
	if err != nil {
		return fmt.Errorf("draw.chain: %w", err)
	}
	close := s.EntriesClose()
	switch at := c.TimeOf(d.Round); {
	case d.Round == 0 || at.Before(close.Add(c.Lead)):
		return fmt.Errorf("draw.round %d (%s): published at %s, want the first %v or more after the entries close (%s)",
			d.Round, c.Name, at.UTC().Format(time.RFC3339), c.Lead, close.UTC().Format(time.RFC3339))
	case s.Mode() == AccessRaffle && at.After(s.StartsAt):
		return fmt.Errorf("raffle: its draw's round %d (%s) is published at %s, after startsAt %s: close the entries at least %v before the start",
			d.Round, c.Name, at.UTC().Format(time.RFC3339), s.StartsAt.UTC().Format(time.RFC3339), c.Lead+c.Period)
	case !hex64.MatchString(d.HeadKey):
		return fmt.Errorf("draw.headKey %q: want 64 lower-case hex digits (an Ed25519 public key)", d.HeadKey)
	}
	return nil
}

func (s *Sale) validateRaffle(mode string) error {
	r := s.Raffle
	if mode != AccessRaffle {
		if r != nil {
			return fmt.Errorf("raffle: set, but access is %q", mode)
		}
		return nil
	}
	switch {
	case r == nil || r.EntriesOpen.IsZero() || r.EntriesClose.IsZero():
		return errors.New("raffle needs entriesOpen and entriesClose (RFC 3339)")
	case !r.EntriesClose.After(r.EntriesOpen):
		return errors.New("raffle.entriesClose is not after raffle.entriesOpen")
	case r.EntriesClose.Add(time.Second).After(s.StartsAt):
		return errors.New("raffle.entriesClose must be at least 1s before startsAt (the draw is frozen and revealed in between)")
	case r.EntriesClose.Sub(r.EntriesOpen) > MaxRaffleEntries:
		return fmt.Errorf("raffle: entries stay open %v, at most %v", r.EntriesClose.Sub(r.EntriesOpen), MaxRaffleEntries)
	}
	return nil
}

func (s *Sale) validatePresale() error {
	p := s.Presale
	if p == nil {
		return nil
	}
	switch {
	case s.Mode() == AccessRaffle:
		// A raffle's draw promises a unit to each of its first places, as
		// many as the sale has units: a presale would sell some of them.
		return errors.New("presale: a raffle cannot have one (its draw promises every unit to its selected places)")
	case p.StartsAt.IsZero() || !p.StartsAt.Before(s.StartsAt):
		return errors.New("presale.startsAt must be set and before startsAt")
	case p.Claim == "" && !p.List:
		return errors.New(`presale: name a claim ("claim" and "values") or set "list": true, or both`)
	case p.Claim != "" && !claimName.MatchString(p.Claim):
		return fmt.Errorf("presale.claim %q: want a JWT claim name (letters, digits, _ . : -; at most 64)", p.Claim)
	case p.Claim != "" && (len(p.Values) == 0 || len(p.Values) > MaxPresaleValues):
		return fmt.Errorf("presale.values: %d values, want 1 to %d", len(p.Values), MaxPresaleValues)
	case p.Claim == "" && len(p.Values) > 0:
		return errors.New("presale.values without presale.claim")
	case p.Cap < 0 || p.Cap > s.Quantity():
		return fmt.Errorf("presale.cap %d: want 0 (no cap) to the sale's %d units", p.Cap, s.Quantity())
	}
	for _, v := range p.Values {
		if v == "" || len(v) > 64 {
			return fmt.Errorf("presale.values: %q, want 1 to 64 characters", v)
		}
	}
	return nil
}
