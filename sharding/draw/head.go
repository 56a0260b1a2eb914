package draw

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"flashsale/sharding/draw/beacon"
)

// Head is a frozen draw's tree head: what an entrant keeps, signed, before
// the beacon round exists, so that a root changed after the round would be
// caught by anyone holding the head.
type Head struct {
	Sale     int64
	Count    int
	Root     Hash
	FrozenAt time.Time // to the millisecond
	Chain    string    // the beacon chain's hash
	Round    uint64
}

const headTag = "flashsale-draw-head-v1\x00"

// Message is the head's signed bytes (the package doc's layout).
func (h *Head) Message() ([]byte, error) {
	c, err := hex.DecodeString(h.Chain)
	if err != nil || len(c) != 32 {
		return nil, fmt.Errorf("draw: head chain %q is not 64 hex digits", h.Chain)
	}
	if h.Count < 0 || h.Sale <= 0 || h.FrozenAt.UnixMilli() <= 0 {
		return nil, fmt.Errorf("draw: head of sale %d, count %d, frozen at %v: out of range", h.Sale, h.Count, h.FrozenAt)
	}
	b := make([]byte, 0, len(headTag)+8+8+32+8+32+8)
	b = append(b, headTag...)
	b = binary.BigEndian.AppendUint64(b, uint64(h.Sale))
	b = binary.BigEndian.AppendUint64(b, uint64(h.Count))
	b = append(b, h.Root[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(h.FrozenAt.UnixMilli()))
	b = append(b, c...)
	return binary.BigEndian.AppendUint64(b, h.Round), nil
}

// NewHeadKey draws a sale's tree-head key.
func NewHeadKey() ed25519.PrivateKey {
	_, k, _ := ed25519.GenerateKey(rand.Reader) // never fails with crypto/rand
	return k
}

// SignHead signs h under key.
func SignHead(key ed25519.PrivateKey, h *Head) ([]byte, error) {
	m, err := h.Message()
	if err != nil {
		return nil, err
	}
	return ed25519.Sign(key, m), nil
}

// ErrHead wraps every reason VerifyHead refuses a tree head.
var ErrHead = errors.New("draw: the tree head does not verify")

// VerifyHead checks a tree head: its signature under the sale's published
// head key, and that it was frozen before its beacon round's time (a head
// dated at or after R's time could have been made knowing R).
func VerifyHead(pub ed25519.PublicKey, h *Head, sig []byte) error {
	m, err := h.Message()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrHead, err)
	}
	if len(pub) != ed25519.PublicKeySize || !ed25519.Verify(pub, m, sig) {
		return fmt.Errorf("%w: the signature is not the sale's head key's", ErrHead)
	}
	c, err := beacon.ByHash(h.Chain)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrHead, err)
	}
	if at := c.TimeOf(h.Round); !h.FrozenAt.Before(at) {
		return fmt.Errorf("%w: frozen at %s, not before round %d's time %s: issued after the beacon could be known",
			ErrHead, h.FrozenAt.UTC().Format(time.RFC3339Nano), h.Round, at.UTC().Format(time.RFC3339))
	}
	return nil
}
