package sale

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestRoomFieldsValidate(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	good := func() Sale {
		return Sale{ID: 1, StartsAt: start, EndsAt: start.Add(time.Hour),
			Items: []Item{{ID: 1, Quantity: 10}}, WaitingRoom: &Room{PreQueue: Duration(10 * time.Minute)}, PowDifficulty: 18, TicketRequired: true}
	}
	s := good()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(*Sale){
		"powDifficulty -1":  func(s *Sale) { s.PowDifficulty = -1 },
		"powDifficulty 29":  func(s *Sale) { s.PowDifficulty = MaxPowDifficulty + 1 },
		"preQueue negative": func(s *Sale) { s.WaitingRoom.PreQueue = -1 },
		"preQueue 25h":      func(s *Sale) { s.WaitingRoom.PreQueue = Duration(25 * time.Hour) },
		"startWindow -1":    func(s *Sale) { s.WaitingRoom.StartWindow = -1 },
		"startWindow 2m":    func(s *Sale) { s.WaitingRoom.StartWindow = Duration(2 * time.Minute) },
		"startWindow lasts": func(s *Sale) { s.EndsAt = s.StartsAt.Add(time.Second) },
		"admitFactor -1":    func(s *Sale) { s.WaitingRoom.AdmitFactor = -1 },
		"admitFactor 0.001": func(s *Sale) { s.WaitingRoom.AdmitFactor = 0.001 },
		"admitFactor 1000":  func(s *Sale) { s.WaitingRoom.AdmitFactor = 1000 },
		"admitFactor NaN":   func(s *Sale) { s.WaitingRoom.AdmitFactor = nan() },
	}
	for name, mut := range bad {
		s := good()
		mut(&s)
		err := s.Validate()
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if field := strings.Fields(name)[0]; !strings.Contains(err.Error(), field) {
			t.Errorf("%s: error %q does not name %s", name, err, field)
		}
	}
}

func nan() float64 { var z float64; return z / z }

func TestRoomDefaultsAndJSON(t *testing.T) {
	in := `{"id":3,"startsAt":"2026-12-01T10:00:00Z","endsAt":"2026-12-01T11:00:00Z","items":[{"id":1,"quantity":5}],"ticketRequired":true,"waitingRoom":{"preQueue":"15m"},"powDifficulty":16}`
	var s Sale
	if err := json.Unmarshal([]byte(in), &s); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	r := s.WaitingRoom
	if time.Duration(r.PreQueue) != 15*time.Minute || r.Window() != DefaultStartWindow || r.Factor() != DefaultAdmitFactor || s.PowDifficulty != 16 {
		t.Fatalf("room %+v pow %d", r, s.PowDifficulty)
	}
	var off Sale
	if err := json.Unmarshal([]byte(`{"id":3}`), &off); err != nil || off.WaitingRoom != nil || off.PowDifficulty != 0 {
		t.Fatalf("defaults: %+v %v", off, err)
	}
	out, _ := json.Marshal(&off)
	if strings.Contains(string(out), "waitingRoom") || strings.Contains(string(out), "pow") {
		t.Fatalf("a sale without a room writes %s", out)
	}
}
