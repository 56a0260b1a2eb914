package room

import (
	"encoding/base64"
	"encoding/binary"
	"time"

	"flashsale/gateway/internal/mac"
)

// A pass is what a queued user holds instead of server state: the sale, the
// user and the place drawn or taken, signed (package mac), valid until the
// sale ends. A poll checks it, computes the place's position against the
// gateway's cached cursor, and needs no Redis call.
//
// Layout before base64url (no padding): version (1 byte, 1), kind (1: the
// draw, 2: the tail), sale id (4, big endian), user id (8), number (8: 0 for
// the draw, whose place comes from the frozen draw; the late arrival's count), expiry (4, unix seconds), tag (16).
const (
	passVersion = 1
	passBody    = 26
	passRaw     = passBody + mac.Size
	// PassLen is the length of a pass's text.
	PassLen = (passRaw*8 + 5) / 6
)

// Kind tells a drawn place from a late one.
type Kind uint8

// Kinds of place.
const (
	Drawn Kind = 1 // in the draw (pre-queue and start window, or a raffle's entries)
	Late  Kind = 2 // after the draw, in order of arrival
)

// Pass is a decoded queue pass.
type Pass struct {
	Kind    Kind
	SaleID  int64
	UserID  uint64
	Number  uint64 // Drawn: 0; Late: the n-th late arrival (1-based)
	Expires int64  // unix seconds
}

// Problem says why a pass was refused; 0 means it is good.
type Problem uint8

// Problems of a pass.
const (
	PassOK        Problem = iota
	PassMalformed         // not a pass: length, alphabet, version or kind
	PassForged            // the tag does not match under any current key
	PassOther             // another user's or another sale's pass
	PassExpired           // its sale has ended
)

var b64 = base64.RawURLEncoding

var problemText = [...]string{"ok", "malformed", "forged", "another user's or sale's", "expired"}

func (p Problem) String() string { return problemText[p] }

// AppendPass appends p's text, signed with ring, to dst.
func AppendPass(dst []byte, ring *mac.Ring, p Pass) []byte {
	var raw [passRaw]byte
	raw[0], raw[1] = passVersion, byte(p.Kind)
	binary.BigEndian.PutUint32(raw[2:], uint32(p.SaleID))
	binary.BigEndian.PutUint64(raw[6:], p.UserID)
	binary.BigEndian.PutUint64(raw[14:], p.Number)
	binary.BigEndian.PutUint32(raw[22:], uint32(p.Expires))
	ring.Append(raw[:passBody], raw[:passBody])
	return b64.AppendEncode(dst, raw[:])
}

// ParsePass checks text as the pass of user in sale at now. It allocates nothing.
func ParsePass(ring *mac.Ring, text []byte, now time.Time, saleID int64, userID uint64) (Pass, Problem) {
	var raw [passRaw + 2]byte
	if len(text) != PassLen {
		return Pass{}, PassMalformed
	}
	n, err := b64.Decode(raw[:], text)
	if err != nil || n != passRaw || raw[0] != passVersion || (raw[1] != byte(Drawn) && raw[1] != byte(Late)) {
		return Pass{}, PassMalformed
	}
	if !ring.Check(raw[:passBody], raw[passBody:passRaw]) {
		return Pass{}, PassForged
	}
	p := Pass{
		Kind:    Kind(raw[1]),
		SaleID:  int64(binary.BigEndian.Uint32(raw[2:])),
		UserID:  binary.BigEndian.Uint64(raw[6:]),
		Number:  binary.BigEndian.Uint64(raw[14:]),
		Expires: int64(binary.BigEndian.Uint32(raw[22:])),
	}
	if p.SaleID != saleID || p.UserID != userID {
		return Pass{}, PassOther
	}
	if now.Unix() >= p.Expires {
		return Pass{}, PassExpired
	}
	return p, PassOK
}
