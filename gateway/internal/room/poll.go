package room

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"flashsale/lua"
	"flashsale/sharding"
	"flashsale/sharding/draw"
)

// Outcome is what a ticket request in a waiting room or raffle comes to.
type Outcome uint8

// Outcomes of Check and Join.
const (
	NotOpen       Outcome = iota // before the entries open: SALE_NOT_STARTED
	NeedJoin                     // no pass, not a frozen entrant (or a pass the frozen draw lost): Join
	Refused                      // the pass was refused (Verdict.Problem)
	Queued                       // waiting: Verdict.Position, Verdict.Wait, Verdict.Chance
	Admitted                     // the place is admitted: hand out the ticket
	SoldOut                      // nothing left: every queued user is told so
	NotSelected                  // a raffle's place past its units: never admitted (final, also after a sell-out)
	EntriesClosed                // a raffle's entries closed without this user
)

// Verdict is the answer to one ticket request.
type Verdict struct {
	Outcome  Outcome
	Problem  Problem // of Refused
	Place    int64   // the place (1-based); 0 before the draw is revealed
	Position int64   // places still ahead, plus one (1: next); before the draw, the entrants so far
	Wait     time.Duration
	// Chance is the chance that a unit is still there when the place is
	// admitted (Odds), or -1 when not known yet (before the draw).
	Chance float64
	// Nonce is the entrant's nonce, in hex, on the answer of a Join into
	// the draw ("" otherwise): the user's half of their leaf.
	Nonce string
}

// Check answers a ticket request of user in sale from the pass it carries
// (nil when none) and the sale's remaining units (-1 when unknown), with no
// Redis call and no allocation. Once the entrants are frozen, an entrant
// without a pass (another device, a cleared browser) is answered from the
// draw too: entered and waiting for the draw until the reveal, then their
// place; so is a raffle's non-entrant (EntriesClosed). Otherwise a request
// without a pass is NeedJoin.
func (r *Room) Check(now time.Time, s *Sale, user uint64, pass []byte, remaining int64) Verdict {
	if now.Before(s.Opens()) {
		return Verdict{Outcome: NotOpen}
	}
	if pass == nil {
		if st := r.State(s.ID); st != nil && st.Frozen != nil && (s.Raffle || st.Frozen.Entered(user)) {
			return r.judge(now, s, user, nil, remaining)
		}
		return Verdict{Outcome: NeedJoin}
	}
	p, prob := ParsePass(r.cfg.Ring, pass, now, s.ID, user)
	if prob != PassOK {
		return Verdict{Outcome: Refused, Problem: prob}
	}
	return r.judge(now, s, user, &p, remaining)
}

// judge answers user, holding pass p (nil: none, the user is looked up in
// the frozen draw), from this gateway's admission state of s.
func (r *Room) judge(now time.Time, s *Sale, user uint64, p *Pass, remaining int64) Verdict {
	st := r.State(s.ID)
	if st == nil {
		// Not read yet (this gateway just started): nobody is admitted
		// before a tick says so.
		st = &State{}
	}
	var pl int64
	if p != nil && p.Kind == Late {
		pl = st.Entrants + int64(p.Number)
	} else if f := st.Frozen; f != nil {
		if !f.Entered(user) {
			// Not among the frozen entrants: a lost entry, or no entry.
			if s.Raffle {
				return Verdict{Outcome: EntriesClosed}
			}
			return Verdict{Outcome: NeedJoin}
		}
		pl = f.Place(user) // 0 until the reveal: entered, waiting for the draw
	}
	switch {
	case s.Raffle && pl > s.Units:
		// Certain from the reveal on, whatever the stock: a raffle never
		// admits a place past its units, so a sell-out changes nothing for
		// it (SOLD_OUT would invite a retry) and returned stock neither.
		return Verdict{Outcome: NotSelected, Place: pl}
	case remaining == 0:
		return Verdict{Outcome: SoldOut}
	case pl > 0 && st.Final && !now.Before(s.Start) && pl <= st.Cursor:
		return Verdict{Outcome: Admitted, Place: pl, Chance: 1}
	}
	v := Verdict{Outcome: Queued, Place: pl, Chance: -1}
	if pl > 0 {
		v.Position = max(pl-st.Cursor, 1)
		v.Chance = Odds(s, st, pl, remaining)
	} else {
		v.Position = max(st.Entrants, 1)
	}
	v.Wait = time.Duration(float64(v.Position) / rate(s, remaining) * float64(time.Second))
	if from := s.AdmitsFrom(); now.Before(from) {
		v.Wait += from.Sub(now)
	}
	return v
}

// Join enters user among sale's entrants while the entries are open (else,
// for a queue, at the end of the line) with one Redis call, appends the
// user's new pass to dst and answers as Check would with it. A user who
// entered before keeps their entry, and gets their nonce again.
func (r *Room) Join(ctx context.Context, now time.Time, s *Sale, user uint64, remaining int64, dst []byte) ([]byte, Verdict, error) {
	if now.Before(s.Opens()) {
		return dst, Verdict{Outcome: NotOpen}, nil
	}
	p := Pass{SaleID: s.ID, UserID: user, Expires: s.End.Unix() + 1}
	var nonce string
	joined := false
	if st := r.State(s.ID); st == nil || st.Frozen == nil {
		// Once the entrants are frozen, Check answers every entrant:
		// whoever asks to join then is not one (the freeze read every
		// entrants shard after its clock passed the close).
		var err error
		if nonce, joined, err = r.enter(ctx, s, user); err != nil {
			return dst, Verdict{}, err
		}
	}
	if joined {
		p.Kind = Drawn
	} else if s.Raffle {
		return dst, Verdict{Outcome: EntriesClosed}, nil
	} else {
		n, err := r.write(ctx, r.c.B().Incr().Key(sharding.RoomTailKey(s.ID)).Build()).AsInt64()
		if err != nil {
			return dst, Verdict{}, fmt.Errorf("joining the end of the queue of sale %d: %w", s.ID, err)
		}
		if n <= 0 {
			return dst, Verdict{}, fmt.Errorf("joining the end of the queue of sale %d: tail counter answered %d", s.ID, n)
		}
		p.Kind, p.Number = Late, uint64(n)
	}
	v := r.judge(now, s, user, &p, remaining)
	if v.Outcome == NeedJoin {
		// An entry the frozen draw does not hold (lost with a failed-over
		// Redis master): the user joins the end, as a late arrival.
		v = Verdict{Outcome: Queued, Chance: -1, Position: 1}
	}
	v.Nonce = nonce
	return AppendPass(dst, r.cfg.Ring, p), v, nil
}

// enter runs room_join.lua: the user's nonce and true when they are an
// entrant (entered now or before), false when the entries had closed by
// Redis's clock without them.
func (r *Room) enter(ctx context.Context, s *Sale, user uint64) (string, bool, error) {
	k := sharding.RoomEntrantsKey(s.ID, sharding.RoomEntrantsShard(user, s.ID))
	args := []string{strconv.FormatUint(user, 10), draw.NewNonce().String(), ms(s.Closes()), ms(s.End.Add(time.Hour))}
	var res rueidis.RedisResult
	if r.cfg.Acks != nil {
		// EVAL, not EVALSHA: one call per user per sale, sent where the
		// batch and its WAIT go.
		res = r.write(ctx, r.c.B().Eval().Script(lua.RoomJoin).Numkeys(1).Key(k).Arg(args...).Build())
	} else {
		res = joinScript.Exec(ctx, r.c, []string{k}, args)
	}
	v, err := res.ToArray()
	if err != nil {
		return "", false, fmt.Errorf("entering user %d in sale %d: %w", user, s.ID, err)
	}
	return parseJoin(v)
}

// write sends cmd, a write a 202 QUEUED promises, through Acks when set.
func (r *Room) write(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if r.cfg.Acks == nil {
		return r.c.Do(ctx, cmd)
	}
	res, _ := r.cfg.Acks.DoAck(ctx, cmd)
	return res
}

func parseJoin(v []rueidis.RedisMessage) (string, bool, error) {
	if len(v) == 1 {
		if n, err := v[0].AsInt64(); err == nil && n == 0 {
			return "", false, nil
		}
	}
	if len(v) != 2 {
		return "", false, fmt.Errorf("room_join: malformed reply of %d elements", len(v))
	}
	if n, err := v[0].AsInt64(); err != nil || n != 1 {
		return "", false, fmt.Errorf("room_join: malformed reply: first element %v %v", n, err)
	}
	s, err := v[1].ToString()
	if err != nil {
		return "", false, fmt.Errorf("room_join: malformed nonce: %w", err)
	}
	if _, err := draw.ParseNonce(s); err != nil {
		return "", false, fmt.Errorf("room_join: malformed nonce: %w", err)
	}
	return s, true, nil
}
