package sharding

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Room is a sale's waiting room (the "waitingRoom" field of a sale file).
// Zero fields take the defaults below.
type Room struct {
	// PreQueue is how long before StartsAt the room opens; 0 (the default)
	// opens it at the start.
	PreQueue Duration `json:"preQueue,omitempty"`
	// StartWindow is how long after StartsAt arrivals still join the random
	// draw (default DefaultStartWindow); later arrivals join the end.
	StartWindow Duration `json:"startWindow,omitempty"`
	// AdmitFactor is the admission rate per remaining unit: the room admits
	// about remaining x AdmitFactor people per second (default
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
	// The room and the proof guard the ticket; without ticketRequired the
	// purchase URL does not ask for one, and both would be walked around.
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

// RoomLotteryShards is the number of keys the entrants of a room's draw are
// spread over: the start of a sale is its peak, and one key would put the
// whole crowd on one Redis core.
const RoomLotteryShards = 16

// RoomStateKey returns the key of a room's admission state (a hash: cursor,
// draw size, last advance, and the frozen draw's root, count and revealed
// seed). It shares its slot with RoomTailKey and RoomSeedKey.
func RoomStateKey(saleID int64) string { return roomTag(saleID) + ":state" }

// RoomTailKey returns the key of a room's counter of late arrivals: each
// late arrival's INCR is its place after the draw.
func RoomTailKey(saleID int64) string { return roomTag(saleID) + ":tail" }

// RoomSeedKey returns the key of the secret seed of a sale's draw, written
// by `flashctl sale create` (its SHA-256 is the sale's Draw commitment) and
// copied into the state once the entrants are frozen.
func RoomSeedKey(saleID int64) string { return roomTag(saleID) + ":seed" }

// RoomLotteryKey returns the key of shard k of a room's draw: a hash of the
// users who entered before the draw closed, each with the nonce of their
// leaf (package draw).
func RoomLotteryKey(saleID int64, k int) string {
	return "{room:" + strconv.FormatInt(saleID, 10) + ":" + strconv.Itoa(k) + "}:entrants"
}

// RoomLotteryShard returns the shard of a room's draw that holds user.
func RoomLotteryShard(userID uint64, saleID int64) int {
	return int(Mix64(userID+uint64(saleID)*0x2545f4914f6cdd1d) % RoomLotteryShards)
}

// PresaleListKey returns the key of the set of user ids an operator loaded
// for a sale's presale (Presale.List).
func PresaleListKey(saleID int64) string { return presaleTag(saleID) + ":users" }

// PresaleCapKey returns the key of the units a sale's presale may still
// sell (Presale.Cap): set at creation, taken one per presale purchase.
func PresaleCapKey(saleID int64) string { return presaleTag(saleID) + ":cap" }

func presaleTag(saleID int64) string { return "{presale:" + strconv.FormatInt(saleID, 10) + "}" }

func roomTag(saleID int64) string { return "{room:" + strconv.FormatInt(saleID, 10) + "}" }
