package draw

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	"flashsale/sharding/draw/beacon"
)

// The draw's log: every event of a sale's draw, in order, each entry's hash
// chained to the one before (the package doc's "log hash"), so that an entry
// changed, dropped or inserted changes every hash after it, and a reader
// holding one hash holds everything before it. Entries are appended with a
// compare-and-append on their sequence number (a second writer of the same
// step is refused, not appended twice); readers check the whole chain and
// the rules of CheckLog.

// Log events.
const (
	EventCommit = "commit" // at creation: commitment, chain, round, head key
	EventFreeze = "freeze" // the entries frozen: root, count, time, head signature
	EventBeacon = "beacon" // round R, verified
	EventReveal = "reveal" // the seed
	EventAbort  = "abort"  // the draw stopped, and why; a redraw needs one
)

// Event is one log entry's body. Its JSON text, as written, is what the
// chain hashes: readers keep the text, never a re-encoding.
type Event struct {
	Seq   int    `json:"seq"`
	Event string `json:"event"`
	Sale  int64  `json:"sale"`
	At    int64  `json:"at"` // unix ms, by the writer's clock: informative
	// commit
	Commitment string `json:"commitment,omitempty"`
	Chain      string `json:"chain,omitempty"`
	Round      uint64 `json:"round,omitempty"`
	HeadKey    string `json:"headKey,omitempty"`
	// freeze
	Root     string `json:"root,omitempty"`
	Count    *int   `json:"count,omitempty"`
	FrozenAt int64  `json:"frozenAt,omitempty"` // unix ms, the head's
	HeadSig  string `json:"headSig,omitempty"`
	// beacon (with Round)
	Signature string `json:"signature,omitempty"`
	// reveal
	Seed string `json:"seed,omitempty"`
	// abort
	Reason string `json:"reason,omitempty"`
}

// Entry is one entry of the log as stored and served.
type Entry struct {
	Body []byte
	Hash Hash
}

const logTag = "flashsale-draw-log-v1\x00"

// ChainHash is the hash of an entry whose body is body after an entry whose
// hash is prev (zero for the first).
func ChainHash(prev Hash, body []byte) Hash {
	h := sha256.New()
	h.Write([]byte(logTag))
	h.Write(prev[:])
	h.Write(body)
	var out Hash
	h.Sum(out[:0])
	return out
}

// NewEntry encodes e as the entry after prev.
func NewEntry(prev Hash, e *Event) (Entry, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Body: b, Hash: ChainHash(prev, b)}, nil
}

// LogState is what a checked log says of its draw: the last entry of each
// kind, and every abort's reason.
type LogState struct {
	Commit, Freeze, Beacon, Reveal *Event
	Aborts                         []string
	Head                           Hash // the last entry's hash
	// after an abort, one more beacon and one more reveal are a redraw
	redrawBeacon, redrawReveal bool
}

// ErrLog wraps every reason CheckLog refuses a log.
var ErrLog = errors.New("draw: the draw's log does not verify")

// CheckLog checks a sale's log: the chain of hashes, the sequence numbers,
// and the order of events. The first entry is the commitment; a freeze
// comes once, after it; a beacon after the freeze and for the committed
// round; a reveal after the beacon (or after the freeze, for a draw without
// a round); a second beacon or reveal only after an abort, which is a
// redraw in the open. A log may stop at any step.
func CheckLog(sale int64, entries []Entry) (*LogState, error) {
	st := &LogState{}
	var prev Hash
	for i, en := range entries {
		if ChainHash(prev, en.Body) != en.Hash {
			return nil, fmt.Errorf("%w: entry %d's hash is not SHA-256 of its body after entry %d's: an entry was changed, dropped or inserted", ErrLog, i, i-1)
		}
		prev = en.Hash
		var e Event
		dec := json.NewDecoder(bytes.NewReader(en.Body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %w", ErrLog, i, err)
		}
		if e.Seq != i || e.Sale != sale {
			return nil, fmt.Errorf("%w: entry %d says seq %d of sale %d", ErrLog, i, e.Seq, e.Sale)
		}
		if err := st.step(&e); err != nil {
			return nil, fmt.Errorf("%w: entry %d (%s): %s", ErrLog, i, e.Event, err)
		}
	}
	st.Head = prev
	return st, nil
}

// step applies one event to the state, refusing one out of order.
func (st *LogState) step(e *Event) error {
	if (st.Commit == nil) != (e.Event == EventCommit) {
		if st.Commit == nil {
			return errors.New("the log does not start with the commitment")
		}
		return errors.New("a second commitment")
	}
	switch e.Event {
	case EventCommit:
		if _, err := ParseHash(e.Commitment); err != nil {
			return err
		}
		if e.Round != 0 {
			if _, err := beacon.ByHash(e.Chain); err != nil {
				return err
			}
		}
		st.Commit = e
	case EventFreeze:
		if st.Freeze != nil {
			return errors.New("a second freeze: the entrants were frozen twice")
		}
		if _, err := ParseHash(e.Root); err != nil || e.Count == nil || *e.Count < 0 || e.FrozenAt <= 0 {
			return errors.New("a freeze without its root, count or time")
		}
		if c := st.Commit; c.Round != 0 {
			ch, _ := beacon.ByHash(c.Chain) // checked at the commit
			if at := ch.TimeOf(c.Round); e.FrozenAt >= at.UnixMilli() {
				return fmt.Errorf("frozen at %d ms, not before round %d's time (%d ms): frozen once the beacon could be known", e.FrozenAt, c.Round, at.UnixMilli())
			}
		}
		st.Freeze = e
	case EventBeacon:
		switch {
		case st.Freeze == nil:
			return errors.New("a beacon before the freeze")
		case st.Beacon != nil && !st.redrawBeacon:
			return errors.New("a second beacon without an abort before it: a silent redraw")
		case e.Round != st.Commit.Round || st.Commit.Round == 0:
			return fmt.Errorf("round %d, the sale committed to round %d", e.Round, st.Commit.Round)
		}
		st.Beacon, st.redrawBeacon = e, false
	case EventReveal:
		switch {
		case st.Freeze == nil:
			return errors.New("a reveal before the freeze")
		case st.Commit.Round != 0 && st.Beacon == nil:
			return errors.New("a reveal before the beacon")
		case st.Reveal != nil && !st.redrawReveal:
			return errors.New("a second reveal without an abort before it: a silent redraw")
		}
		if _, err := ParseHash(e.Seed); err != nil {
			return err
		}
		st.Reveal, st.redrawReveal = e, false
	case EventAbort:
		if e.Reason == "" {
			return errors.New("an abort without its reason")
		}
		st.Aborts = append(st.Aborts, e.Reason)
		st.redrawBeacon, st.redrawReveal = st.Beacon != nil, st.Reveal != nil
	default:
		return fmt.Errorf("unknown event %q", e.Event)
	}
	return nil
}
