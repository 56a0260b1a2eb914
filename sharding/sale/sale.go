package sale

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"flashsale/sharding"
)

// DefaultPaymentWindow is how long a buyer has to pay when a sale names none.
const DefaultPaymentWindow = 10 * time.Minute

// MaxPaymentWindow is the longest payment window a sale may have: the order
// event format refuses longer ones (orderevent.MaxPaymentWindow).
const MaxPaymentWindow = 7 * 24 * time.Hour

// Sale describes one flash sale. It is written by the ops tool (`flashctl sale
// create`) to PostgreSQL and, as JSON, to Redis under SaleKey(ID); gateways and
// the ops tool read it from there. A Sale is immutable once loaded: a change
// (a reshard, say) is a new value stored under the same key with Version+1.
type Sale struct {
	ID            int64     `json:"id"`
	Name          string    `json:"name"`
	StartsAt      time.Time `json:"startsAt"`
	EndsAt        time.Time `json:"endsAt"`
	PaymentWindow Duration  `json:"paymentWindow"`
	Items         []Item    `json:"items"`
	// Shards holds one hash tag per shard; len(Shards) is the shard count S.
	Shards []string `json:"shards"`
	// Version grows by one with every change of the stored description.
	Version int64 `json:"version"`
	// TicketRequired makes every purchase carry a valid ticket from the
	// sale's ticket endpoint (X-Purchase-Ticket), so the purchase URL is of
	// no use before the start or outside the front door. Off by default:
	// the bench and existing sales buy without one.
	TicketRequired bool `json:"ticketRequired,omitempty"`
	// WaitingRoom, when set, puts the ticket endpoint behind the sale's
	// waiting room (see Room); nil (the default) admits at once.
	WaitingRoom *Room `json:"waitingRoom,omitempty"`
	// Access is the sale's access mode (AccessOpen, AccessQueue or
	// AccessRaffle); "" is queue with a waiting room, else open (Mode).
	Access string `json:"access,omitempty"`
	// Raffle is a raffle's registration window.
	Raffle *Raffle `json:"raffle,omitempty"`
	// Draw is the commitment to the seed of a queue's or raffle's
	// verifiable draw; nil for a sale created without one (the draw then
	// uses a seed drawn at the freeze, which nobody saw committed).
	Draw *DrawCommitment `json:"draw,omitempty"`
	// Presale, when set, opens the sale early to some buyers.
	Presale *Presale `json:"presale,omitempty"`
	// PowDifficulty is the proof of work (leading zero bits) the ticket
	// endpoint asks for; 0 (the default) asks for none unless the operator does.
	PowDifficulty int `json:"powDifficulty,omitempty"`
	// State is the operator's word on the sale: "" (selling within its
	// window), StatePaused or StateEnded (ended early, for good). flashctl
	// sets it together with every shard's halt key (AppendHaltKey), which the
	// reserve script obeys, so a pause is exact in Redis and the gateways'
	// catalog refresh is only the fast path.
	State string `json:"state,omitempty"`
	// Brand dresses the sale page (see Brand); nil shows the plain page.
	Brand *Brand `json:"brand,omitempty"`
}

// States of a sale set by an operator (Sale.State).
const (
	StatePaused = "PAUSED"
	StateEnded  = "ENDED"
)

// Item is one product of a sale with a fixed quantity and price.
type Item struct {
	ID       int64  `json:"id"`
	Name     string `json:"name"`
	Price    int64  `json:"price"` // in the currency's minor unit (cents)
	Currency string `json:"currency"`
	Quantity int64  `json:"quantity"`
	// Image is the item's picture, an image URL (see ValidImageURL);
	// Description a short text shown under its name (at most
	// MaxDescriptionLen characters, line breaks allowed). Both optional.
	Image       string `json:"image,omitempty"`
	Description string `json:"description,omitempty"`
}

// Duration is a time.Duration that reads and writes JSON as "10m" (or as
// nanoseconds, for symmetry with encoding/json's default).
type Duration time.Duration

// MarshalJSON writes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return strconv.AppendQuote(nil, time.Duration(d).String()), nil
}

// UnmarshalJSON reads "90s" or an integer number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration: want a string like \"10m\" or nanoseconds, got %s", b)
	}
	*d = Duration(n)
	return nil
}

// Window returns the payment window, DefaultPaymentWindow when unset.
func (s *Sale) Window() time.Duration {
	if s.PaymentWindow <= 0 {
		return DefaultPaymentWindow
	}
	return time.Duration(s.PaymentWindow)
}

// Around reports whether now lies between lead before the sale's start and
// tail after its last payment window closed (its end plus Window): the span
// in which the sale's records still change, widened by the caller's margins.
func (s *Sale) Around(now time.Time, lead, tail time.Duration) bool {
	return now.After(s.StartsAt.Add(-lead)) && now.Before(s.EndsAt.Add(s.Window()+tail))
}

// Item returns the sale's item with id, or nil.
func (s *Sale) Item(id int64) *Item {
	for i := range s.Items {
		if s.Items[i].ID == id {
			return &s.Items[i]
		}
	}
	return nil
}

// Validate reports the first thing wrong with s, in words an operator can act on.
// Shards may be empty (not yet placed); when present they must be distinct.
func (s *Sale) Validate() error {
	switch {
	case s.ID <= 0 || s.ID > sharding.MaxSaleID:
		return fmt.Errorf("sale id %d: want 1..%d", s.ID, int64(sharding.MaxSaleID))
	case s.StartsAt.IsZero() || s.EndsAt.IsZero():
		return errors.New("sale needs startsAt and endsAt (RFC 3339)")
	case !s.EndsAt.After(s.StartsAt):
		return fmt.Errorf("sale ends (%s) before it starts (%s)", s.EndsAt.Format(time.RFC3339), s.StartsAt.Format(time.RFC3339))
	case s.PaymentWindow < 0:
		return errors.New("paymentWindow is negative")
	case s.PaymentWindow > 0 && (s.PaymentWindow < Duration(time.Second) || s.PaymentWindow > Duration(MaxPaymentWindow)):
		return fmt.Errorf("paymentWindow %v: want 1s..%v (the writer refuses order events with a longer window)", time.Duration(s.PaymentWindow), MaxPaymentWindow)
	case len(s.Items) == 0:
		return errors.New("sale has no items")
	case s.State != "" && s.State != StatePaused && s.State != StateEnded:
		return fmt.Errorf("state %q: want empty, %s or %s", s.State, StatePaused, StateEnded)
	case len(s.Shards) > sharding.MaxShards:
		return fmt.Errorf("%d shards: at most %d", len(s.Shards), sharding.MaxShards)
	}
	if err := s.validateFrontDoor(); err != nil {
		return err
	}
	if err := s.validateAccess(); err != nil {
		return err
	}
	if err := s.validateBrand(); err != nil {
		return err
	}
	seen := make(map[int64]bool, len(s.Items))
	for _, it := range s.Items {
		switch {
		case it.ID <= 0:
			return fmt.Errorf("item id %d: want a positive integer", it.ID)
		case seen[it.ID]:
			return fmt.Errorf("item id %d appears twice", it.ID)
		case it.Quantity <= 0:
			return fmt.Errorf("item %d: quantity %d, want > 0", it.ID, it.Quantity)
		case it.Price < 0:
			return fmt.Errorf("item %d: negative price", it.ID)
		}
		seen[it.ID] = true
	}
	tags := make(map[string]bool, len(s.Shards))
	for i, t := range s.Shards {
		if t == "" || tags[t] {
			return fmt.Errorf("shard %d: empty or repeated hash tag %q", i, t)
		}
		for j := 0; j < len(t); j++ {
			if t[j] == '{' || t[j] == '}' {
				return fmt.Errorf("shard %d: hash tag %q contains a brace", i, t)
			}
		}
		tags[t] = true
	}
	return nil
}
