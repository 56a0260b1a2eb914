package sale

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestAccessFieldsValidate: every malformed access mode, raffle window,
// draw commitment or presale is refused with an error naming its field.
func TestAccessFieldsValidate(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	good := func() Sale {
		return Sale{ID: 1, StartsAt: start, EndsAt: start.Add(time.Hour), Items: []Item{{ID: 1, Quantity: 10}},
			TicketRequired: true, Access: AccessQueue, WaitingRoom: &Room{},
			Draw:    &DrawCommitment{Commitment: strings.Repeat("ab", 32)},
			Presale: &Presale{StartsAt: start.Add(-10 * time.Minute), Claim: "tier", Values: []string{"gold"}, List: true, Cap: 4}}
	}
	s := good()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	// raffle turns the good queue into a good raffle (without the presale,
	// which a raffle cannot have).
	raffle := func(s *Sale) {
		s.Access, s.WaitingRoom = AccessRaffle, nil
		s.Raffle = &Raffle{EntriesOpen: start.Add(-time.Hour), EntriesClose: start.Add(-time.Minute)}
	}
	r := good()
	raffle(&r)
	r.Presale = nil
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(*Sale){
		"access draw":                   func(s *Sale) { s.Access = "draw" },
		"access without ticketRequired": func(s *Sale) { raffle(s); s.Presale, s.TicketRequired = nil, false },
		`access "open" with a waitingRoom`: func(s *Sale) {
			s.Access, s.Draw = AccessOpen, nil
		},
		"raffle without entries":       func(s *Sale) { raffle(s); s.Raffle = nil },
		"raffle.entriesClose before":   func(s *Sale) { raffle(s); s.Raffle.EntriesClose = s.Raffle.EntriesOpen },
		"raffle.entriesClose at start": func(s *Sale) { raffle(s); s.Raffle.EntriesClose = start },
		"raffle: 31 days":              func(s *Sale) { raffle(s); s.Raffle.EntriesOpen = start.Add(-31 * 24 * time.Hour) },
		"raffle on a queue": func(s *Sale) {
			s.Raffle = &Raffle{EntriesOpen: start.Add(-time.Hour), EntriesClose: start.Add(-time.Minute)}
		},
		"presale: a raffle":     func(s *Sale) { raffle(s) },
		"draw.commitment short": func(s *Sale) { s.Draw.Commitment = "abc" },
		"draw.commitment upper": func(s *Sale) { s.Draw.Commitment = strings.Repeat("AB", 32) },
		"draw on an open sale": func(s *Sale) {
			s.Access, s.WaitingRoom = AccessOpen, nil
		},
		"presale.startsAt after":  func(s *Sale) { s.Presale.StartsAt = start },
		"presale nobody":          func(s *Sale) { s.Presale.Claim, s.Presale.Values, s.Presale.List = "", nil, false },
		"presale.claim quote":     func(s *Sale) { s.Presale.Claim = `ti"er` },
		"presale.values none":     func(s *Sale) { s.Presale.Values = nil },
		"presale.values empty":    func(s *Sale) { s.Presale.Values = []string{""} },
		"presale.values no claim": func(s *Sale) { s.Presale.Claim = "" },
		"presale.cap negative":    func(s *Sale) { s.Presale.Cap = -1 },
		"presale.cap 11":          func(s *Sale) { s.Presale.Cap = 11 },
	}
	for name, mut := range bad {
		s := good()
		mut(&s)
		err := s.Validate()
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if field := strings.Fields(name)[0]; !strings.Contains(err.Error(), strings.Trim(field, ":")) {
			t.Errorf("%s: error %q does not name %s", name, err, field)
		}
	}
}

// TestAccessModes: the mode of a sale file, its default from the waiting
// room, and the phase times.
func TestAccessModes(t *testing.T) {
	var s Sale
	in := `{"id":3,"startsAt":"2026-12-01T10:00:00Z","endsAt":"2026-12-01T11:00:00Z","items":[{"id":1,"quantity":5},{"id":2,"quantity":7}],
		"ticketRequired":true,"presale":{"startsAt":"2026-12-01T09:50:00Z","list":true}}`
	if err := json.Unmarshal([]byte(in), &s); err != nil || s.Validate() != nil {
		t.Fatalf("%v %v", err, s.Validate())
	}
	if s.Mode() != AccessOpen || s.Drawn() || s.Quantity() != 12 || !s.Opens().Equal(s.Presale.StartsAt) {
		t.Fatalf("mode %s drawn %v quantity %d opens %v", s.Mode(), s.Drawn(), s.Quantity(), s.Opens())
	}
	if !s.InPresale(s.StartsAt.Add(-time.Minute)) || s.InPresale(s.StartsAt) || s.InPresale(s.Presale.StartsAt.Add(-time.Second)) {
		t.Fatal("presale phase bounds")
	}
	s.WaitingRoom = &Room{}
	if s.Mode() != AccessQueue || !s.Drawn() {
		t.Fatalf("a sale with a waiting room and no access: %s", s.Mode())
	}
}
