package schema

import (
	"encoding/json"
	"fmt"

	"flashsale/sharding/sale"
)

// FrontDoor is what PostgreSQL keeps of a sale's front door and fair access
// (the sales.front_door column, migration 00004): the fields of the sale
// description it has no column of its own for.
type FrontDoor struct {
	TicketRequired bool                 `json:"ticketRequired,omitempty"`
	WaitingRoom    *sale.Room           `json:"waitingRoom,omitempty"`
	PowDifficulty  int                  `json:"powDifficulty,omitempty"`
	Access         string               `json:"access,omitempty"`
	Raffle         *sale.Raffle         `json:"raffle,omitempty"`
	Presale        *sale.Presale        `json:"presale,omitempty"`
	Draw           *sale.DrawCommitment `json:"draw,omitempty"`
}

// FrontDoorOf returns s's front door.
func FrontDoorOf(s *sale.Sale) FrontDoor {
	return FrontDoor{TicketRequired: s.TicketRequired, WaitingRoom: s.WaitingRoom, PowDifficulty: s.PowDifficulty,
		Access: s.Access, Raffle: s.Raffle, Presale: s.Presale, Draw: s.Draw}
}

// Apply sets f's fields on s.
func (f *FrontDoor) Apply(s *sale.Sale) {
	s.TicketRequired, s.WaitingRoom, s.PowDifficulty = f.TicketRequired, f.WaitingRoom, f.PowDifficulty
	s.Access, s.Raffle, s.Presale, s.Draw = f.Access, f.Raffle, f.Presale, f.Draw
}

// ParseFrontDoor reads the front_door column's value: the zero FrontDoor
// for NULL (a sale created before migration 00004, or an open sale).
func ParseFrontDoor(j []byte) (FrontDoor, error) {
	var f FrontDoor
	if len(j) == 0 {
		return f, nil
	}
	if err := json.Unmarshal(j, &f); err != nil {
		return f, fmt.Errorf("decoding front_door: %w", err)
	}
	return f, nil
}

func frontDoorJSON(s *sale.Sale) ([]byte, error) {
	j, err := json.Marshal(FrontDoorOf(s))
	if err != nil {
		return nil, fmt.Errorf("encoding the front door of sale %d: %w", s.ID, err)
	}
	return j, nil
}
