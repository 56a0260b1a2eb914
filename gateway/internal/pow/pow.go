// Package pow is the ticket endpoint's proof of work against bots: a
// stateless challenge, bound by an HMAC (package mac) to the token's
// subject, the sale, a difficulty and a short expiry, and its check.
//
// The proof of a challenge c is a decimal nonce n such that SHA-256 of the
// ASCII bytes "<c>:<n>" starts with at least D zero bits (D is in the
// challenge); the client sends "<c>:<n>" as the X-Proof header. Verifying
// costs the gateway one SHA-256 of at most 72 bytes plus the HMAC of the
// challenge (two SHA-256 of a block or two), and allocates nothing; a
// solver does 2^D hashes on average.
//
// Replay: a solved proof stays valid until its challenge expires (Config.TTL,
// default 2 minutes) and is checked without server state, so it can be sent
// again. It is bound to its user and sale, and what it buys is that user's
// ticket (or that user's place in the waiting room, where one entry per user
// is kept in Redis and a late join only ever goes to the end): the sale
// sells each user at most one active order, and the per-user bucket limits
// the asks. A replay therefore mints more tickets for the same user, never a
// ticket for another one, and a bot farm pays a solve per account and per
// expiry. A spent-proof list shared by every gateway would cost a Redis write
// per proof at the peak for no unit more of protection.
package pow

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"math/bits"
	"sync/atomic"
	"time"

	"flashsale/gateway/internal/mac"
)

// Challenge layout before base64url (no padding): version (1 byte, 1),
// difficulty (1), sale id (4, big endian), user id (8), expiry (4, unix
// seconds), salt (4), tag (16).
const (
	version      = 1
	bodyLen      = 22
	rawLen       = bodyLen + mac.Size
	ChallengeLen = (rawLen*8 + 5) / 6 // 51
	// MaxNonceDigits is the longest nonce accepted: a uint64.
	MaxNonceDigits = 20
	// MaxProofLen is the longest X-Proof value accepted.
	MaxProofLen = ChallengeLen + 1 + MaxNonceDigits
	// MaxDifficulty is the hardest challenge issued.
	MaxDifficulty = 32
)

var b64 = base64.RawURLEncoding

// DefaultTTL is the default lifetime of a challenge.
const DefaultTTL = 2 * time.Minute

// Issuer issues and checks challenges. It is safe for concurrent use.
type Issuer struct {
	ring *mac.Ring
	ttl  time.Duration
	salt atomic.Uint32
}

// NewIssuer returns an issuer signing with ring; ttl <= 0 means DefaultTTL.
func NewIssuer(ring *mac.Ring, ttl time.Duration) *Issuer {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	i := &Issuer{ring: ring, ttl: ttl}
	i.salt.Store(uint32(time.Now().UnixNano()))
	return i
}

// AppendChallenge appends a new challenge for user in sale at difficulty d
// (1..MaxDifficulty) to dst. It allocates nothing when dst has room.
func (i *Issuer) AppendChallenge(dst []byte, now time.Time, saleID int64, userID uint64, d int) []byte {
	var raw [rawLen]byte
	raw[0], raw[1] = version, byte(min(max(d, 1), MaxDifficulty))
	binary.BigEndian.PutUint32(raw[2:], uint32(saleID))
	binary.BigEndian.PutUint64(raw[6:], userID)
	binary.BigEndian.PutUint32(raw[14:], uint32(now.Add(i.ttl).Unix()))
	binary.BigEndian.PutUint32(raw[18:], i.salt.Add(0x9e3779b9))
	i.ring.Append(raw[:bodyLen], raw[:bodyLen])
	return b64.AppendEncode(dst, raw[:])
}

// Result says what a proof is worth; 0 means it is good.
type Result uint8

// Results of Verify.
const (
	OK        Result = iota
	Malformed        // not "<challenge>:<decimal nonce>", or not a challenge of this format
	Forged           // the challenge's tag does not match under any current key
	Other            // another user's or another sale's challenge
	Expired          // the challenge expired: ask for a new one
	Weak             // the hash has fewer leading zero bits than the challenge asks
)

var resultText = [...]string{"ok", "malformed", "forged", "another user's or sale's", "expired", "not enough work"}

func (r Result) String() string { return resultText[r] }

// Verify checks proof ("<challenge>:<nonce>") for user in sale at now and
// returns the challenge's difficulty with the result. It allocates nothing.
func (i *Issuer) Verify(now time.Time, proof []byte, saleID int64, userID uint64) (int, Result) {
	if len(proof) < ChallengeLen+2 || len(proof) > MaxProofLen || proof[ChallengeLen] != ':' {
		return 0, Malformed
	}
	if !nonce(proof[ChallengeLen+1:]) {
		return 0, Malformed
	}
	var raw [rawLen + 2]byte
	n, err := b64.Decode(raw[:], proof[:ChallengeLen])
	if err != nil || n != rawLen || raw[0] != version || raw[1] == 0 || raw[1] > MaxDifficulty {
		return 0, Malformed
	}
	if !i.ring.Check(raw[:bodyLen], raw[bodyLen:rawLen]) {
		return 0, Forged
	}
	d := int(raw[1])
	if int64(binary.BigEndian.Uint32(raw[2:])) != saleID || binary.BigEndian.Uint64(raw[6:]) != userID {
		return d, Other
	}
	if now.Unix() >= int64(binary.BigEndian.Uint32(raw[14:])) {
		return d, Expired
	}
	if sum := sha256.Sum256(proof); LeadingZeros(&sum) < d {
		return d, Weak
	}
	return d, OK
}

// nonce reports whether b is a decimal uint64 (digits only, no sign).
func nonce(b []byte) bool {
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
		hi, lo := bits.Mul64(n, 10)
		lo, carry := bits.Add64(lo, uint64(c-'0'), 0)
		if hi != 0 || carry != 0 {
			return false
		}
		n = lo
	}
	return true
}

// LeadingZeros returns the number of leading zero bits of sum.
func LeadingZeros(sum *[32]byte) int {
	for i := 0; i < 32; i += 8 {
		if w := binary.BigEndian.Uint64(sum[i:]); w != 0 {
			return i*8 + bits.LeadingZeros64(w)
		}
	}
	return 256
}

// Difficulty of a challenge in a text, or 0 when it is not one.
func Difficulty(challenge []byte) int {
	var raw [rawLen + 2]byte
	if len(challenge) != ChallengeLen {
		return 0
	}
	if n, err := b64.Decode(raw[:], challenge); err != nil || n != rawLen || raw[0] != version {
		return 0
	}
	return int(raw[1])
}
