package room

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"flashsale/sharding"
)

// Outcome is what a ticket request in a waiting room comes to.
type Outcome uint8

// Outcomes of Check and Join.
const (
	NotOpen  Outcome = iota // before the room opens: SALE_NOT_STARTED
	NeedJoin                // no pass: Join
	Refused                 // the pass was refused (Verdict.Problem)
	Queued                  // waiting: Verdict.Position, Verdict.Wait
	Admitted                // the place is admitted: hand out the ticket
	SoldOut                 // nothing left: every queued user is told so
)

// Verdict is the answer to one ticket request.
type Verdict struct {
	Outcome  Outcome
	Problem  Problem // of Refused
	Place    int64   // the place in the room (1-based)
	Position int64   // places still ahead, plus one (1: next)
	Wait     time.Duration
}

// Check answers a ticket request of user in sale from the pass it carries
// (nil when none) and the sale's remaining units (-1 when unknown), with no
// Redis call and no allocation.
func (r *Room) Check(now time.Time, s *Sale, user uint64, pass []byte, remaining int64) Verdict {
	if now.Before(s.Opens()) {
		return Verdict{Outcome: NotOpen}
	}
	if pass == nil {
		return Verdict{Outcome: NeedJoin}
	}
	p, prob := ParsePass(r.cfg.Ring, pass, now, s.ID, user)
	if prob != PassOK {
		return Verdict{Outcome: Refused, Problem: prob}
	}
	return r.judge(now, s, &p, remaining)
}

func (r *Room) judge(now time.Time, s *Sale, p *Pass, remaining int64) Verdict {
	if remaining == 0 {
		return Verdict{Outcome: SoldOut}
	}
	st := r.State(s.ID)
	if st == nil {
		// Not read yet (this gateway just started): nobody is admitted
		// before a tick says so.
		st = &State{}
	}
	pl := place(p, st)
	if st.Final && !now.Before(s.Start) && pl <= st.Cursor {
		return Verdict{Outcome: Admitted, Place: pl}
	}
	v := Verdict{Outcome: Queued, Place: pl, Position: max(pl-st.Cursor, 1)}
	v.Wait = time.Duration(float64(v.Position) / rate(s, remaining) * float64(time.Second))
	if from := s.AdmitsFrom(); now.Before(from) {
		v.Wait += from.Sub(now)
	}
	return v
}

// Join puts user into sale's room (the draw while it is open, else the end
// of the line) with one Redis call, appends the user's new pass to dst and
// answers as Check would with it. A user who joined the draw before gets
// the same draw again.
func (r *Room) Join(ctx context.Context, now time.Time, s *Sale, user uint64, remaining int64, dst []byte) ([]byte, Verdict, error) {
	if now.Before(s.Opens()) {
		return dst, Verdict{Outcome: NotOpen}, nil
	}
	p := Pass{SaleID: s.ID, UserID: user, Expires: s.End.Unix() + 1}
	joined := false
	if now.Before(s.Closes()) {
		d, ok, err := r.joinDraw(ctx, s, user)
		if err != nil {
			return dst, Verdict{}, err
		}
		p.Kind, p.Number, joined = Drawn, d, ok
	}
	if !joined {
		n, err := r.c.Do(ctx, r.c.B().Incr().Key(sharding.RoomTailKey(s.ID)).Build()).AsInt64()
		if err != nil {
			return dst, Verdict{}, fmt.Errorf("joining the end of the room of sale %d: %w", s.ID, err)
		}
		if n <= 0 {
			return dst, Verdict{}, fmt.Errorf("joining the end of the room of sale %d: tail counter answered %d", s.ID, n)
		}
		p.Kind, p.Number = Late, uint64(n)
	}
	return AppendPass(dst, r.cfg.Ring, p), r.judge(now, s, &p, remaining), nil
}

// joinDraw runs room_join.lua; false means the draw had closed by Redis's clock.
func (r *Room) joinDraw(ctx context.Context, s *Sale, user uint64) (uint64, bool, error) {
	k := sharding.RoomLotteryKey(s.ID, sharding.RoomLotteryShard(user, s.ID))
	v, err := joinScript.Exec(ctx, r.c, []string{k}, []string{strconv.FormatUint(user, 10),
		strconv.FormatUint(newDraw(), 10), ms(s.Closes()), ms(s.End.Add(time.Hour))}).ToArray()
	if err != nil {
		return 0, false, fmt.Errorf("joining the draw of sale %d: %w", s.ID, err)
	}
	return parseJoin(v)
}

func parseJoin(v []rueidis.RedisMessage) (uint64, bool, error) {
	if len(v) == 1 {
		if n, err := v[0].AsInt64(); err == nil && n == 0 {
			return 0, false, nil
		}
	}
	if len(v) != 2 {
		return 0, false, fmt.Errorf("room_join: malformed reply of %d elements", len(v))
	}
	if n, err := v[0].AsInt64(); err != nil || n != 1 {
		return 0, false, fmt.Errorf("room_join: malformed reply: first element %v %v", n, err)
	}
	s, err := v[1].ToString()
	if err != nil {
		return 0, false, fmt.Errorf("room_join: malformed draw: %w", err)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f >= 1<<drawBits || f != float64(uint64(f)) {
		return 0, false, fmt.Errorf("room_join: malformed draw %q", s)
	}
	return uint64(f), true, nil
}
