package sale

import (
	"errors"
	"fmt"
	"time"
)

// Room is a sale's waiting room (the "waitingRoom" field of a sale file).
// Zero fields take the defaults below.
type Room struct {
	// PreQueue is how long before StartsAt the waiting room opens; 0 (the
	// default) opens it at the start.
	PreQueue Duration `json:"preQueue,omitempty"`
	// StartWindow is how long after StartsAt arrivals are still entrants,
	// ordered by the draw (default DefaultStartWindow); later arrivals join
	// the end.
	StartWindow Duration `json:"startWindow,omitempty"`
	// AdmitFactor is the admission rate per remaining unit: the waiting
	// room admits about remaining x AdmitFactor places per second (default
	// DefaultAdmitFactor).
	AdmitFactor float64 `json:"admitFactor,omitempty"`
}

// Defaults and bounds of a Room and of Sale.PowDifficulty.
const (
	DefaultStartWindow = 2 * time.Second
	MaxStartWindow     = time.Minute
	MaxPreQueue        = 24 * time.Hour
	DefaultAdmitFactor = 1.0
	MinAdmitFactor     = 0.01
	MaxAdmitFactor     = 100.0
	// MaxPowDifficulty is the hardest proof of work a sale may ask for: 2^28
	// hashes is minutes in a phone's browser.
	MaxPowDifficulty = 28
)

// Window returns the start window, DefaultStartWindow when unset.
func (r *Room) Window() time.Duration {
	if r.StartWindow <= 0 {
		return DefaultStartWindow
	}
	return time.Duration(r.StartWindow)
}

// Factor returns the admit factor, DefaultAdmitFactor when unset.
func (r *Room) Factor() float64 {
	if r.AdmitFactor <= 0 {
		return DefaultAdmitFactor
	}
	return r.AdmitFactor
}

func (s *Sale) validateFrontDoor() error {
	if s.PowDifficulty < 0 || s.PowDifficulty > MaxPowDifficulty {
		return fmt.Errorf("powDifficulty %d: want 0 (off) to %d leading zero bits", s.PowDifficulty, MaxPowDifficulty)
	}
	// The waiting room and the proof guard the ticket; without
	// ticketRequired the purchase URL does not ask for one, and both would
	// be walked around.
	if s.PowDifficulty > 0 && !s.TicketRequired {
		return errors.New("powDifficulty needs ticketRequired: true (without it a purchase needs no ticket, so no proof either)")
	}
	r := s.WaitingRoom
	if r == nil {
		return nil
	}
	if !s.TicketRequired {
		return errors.New("waitingRoom needs ticketRequired: true (without it a purchase needs no ticket, so nobody waits)")
	}
	switch {
	case r.PreQueue < 0 || r.PreQueue > Duration(MaxPreQueue):
		return fmt.Errorf("waitingRoom.preQueue %v: want 0 (off) to %v", time.Duration(r.PreQueue), MaxPreQueue)
	case r.StartWindow < 0 || r.StartWindow > Duration(MaxStartWindow):
		return fmt.Errorf("waitingRoom.startWindow %v: want 0 (default %v) to %v", time.Duration(r.StartWindow), DefaultStartWindow, MaxStartWindow)
	case r.AdmitFactor != 0 && !(r.AdmitFactor >= MinAdmitFactor && r.AdmitFactor <= MaxAdmitFactor):
		return fmt.Errorf("waitingRoom.admitFactor %v: want 0 (default %v) or %v to %v admissions per second per remaining unit", r.AdmitFactor, DefaultAdmitFactor, MinAdmitFactor, MaxAdmitFactor)
	case r.Window() >= s.EndsAt.Sub(s.StartsAt):
		return fmt.Errorf("waitingRoom.startWindow %v: the sale lasts only %v", r.Window(), s.EndsAt.Sub(s.StartsAt))
	}
	return nil
}
