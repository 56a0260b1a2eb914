package sale

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"flashsale/sharding"
)

func TestSaleValidate(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	good := func() Sale {
		return Sale{ID: 1, StartsAt: start, EndsAt: start.Add(time.Hour),
			Items: []Item{{ID: 1, Quantity: 10, Price: 100}}, Shards: sharding.UniformTags(1, 4)}
	}
	s := good()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(*Sale){
		"sale id":       func(s *Sale) { s.ID = 0 },
		"sale id range": func(s *Sale) { s.ID = sharding.MaxSaleID + 1 },
		"startsAt":      func(s *Sale) { s.StartsAt = time.Time{} },
		"before":        func(s *Sale) { s.EndsAt = s.StartsAt },
		"no items":      func(s *Sale) { s.Items = nil },
		"quantity":      func(s *Sale) { s.Items[0].Quantity = 0 },
		"twice":         func(s *Sale) { s.Items = append(s.Items, s.Items[0]) },
		"negative":      func(s *Sale) { s.Items[0].Price = -1 },
		"brace":         func(s *Sale) { s.Shards[1] = "a}b" },
		"repeated":      func(s *Sale) { s.Shards[1] = s.Shards[0] },
		"paymentWindow": func(s *Sale) { s.PaymentWindow = -1 },
	}
	for want, mut := range bad {
		s := good()
		mut(&s)
		err := s.Validate()
		if err == nil {
			t.Errorf("%s: accepted", want)
			continue
		}
		if !strings.Contains(err.Error(), strings.Fields(want)[0]) {
			t.Errorf("%s: error %q does not name the problem", want, err)
		}
	}
}

func TestSaleJSON(t *testing.T) {
	in := `{"id":3,"name":"x","startsAt":"2026-12-01T10:00:00Z","endsAt":"2026-12-01T11:00:00Z","paymentWindow":"15m","items":[{"id":1,"quantity":5}]}`
	var s Sale
	if err := json.Unmarshal([]byte(in), &s); err != nil {
		t.Fatal(err)
	}
	if s.Window() != 15*time.Minute {
		t.Fatal(s.Window())
	}
	var d Duration
	if err := json.Unmarshal([]byte(`"soon"`), &d); err == nil {
		t.Fatal("bad duration accepted")
	}
	s.PaymentWindow = 0
	if s.Window() != DefaultPaymentWindow {
		t.Fatal("default window")
	}
}

// TestSaleAround: the span runs from lead before the start to tail after the
// end plus the payment window (the default one when unset), both ends open.
func TestSaleAround(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	s := &Sale{StartsAt: start, EndsAt: start.Add(time.Hour), PaymentWindow: Duration(10 * time.Minute)}
	lead, tail := 5*time.Minute, 20*time.Minute
	for _, c := range []struct {
		at   time.Time
		want bool
	}{
		{start.Add(-lead), false},
		{start.Add(-lead + time.Second), true},
		{start.Add(30 * time.Minute), true},
		{start.Add(time.Hour + 10*time.Minute + tail - time.Second), true},
		{start.Add(time.Hour + 10*time.Minute + tail), false},
	} {
		if got := s.Around(c.at, lead, tail); got != c.want {
			t.Errorf("Around(%v) = %v, want %v", c.at.Sub(start), got, c.want)
		}
	}
	s.PaymentWindow = 0
	end := start.Add(time.Hour + DefaultPaymentWindow + tail)
	if !s.Around(end.Add(-time.Second), lead, tail) || s.Around(end, lead, tail) {
		t.Errorf("with the default payment window the span should end at %v", end.Sub(start))
	}
}
