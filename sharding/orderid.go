package sharding

import "encoding/binary"

// OrderID is a version 8 UUID whose first four bytes are the sale id, so that an
// order id alone tells which sale, and with the owner's user id which shard,
// holds the order record.
type OrderID [16]byte

// NewOrderID builds the order id of sale from 96 bits of caller-chosen entropy:
// random for a fresh click, or a hash of (sale, user, item, Idempotency-Key) so
// that a retried request names the same order.
func NewOrderID(saleID int64, hi uint64, lo uint32) OrderID {
	var id OrderID
	binary.BigEndian.PutUint32(id[0:4], uint32(saleID))
	binary.BigEndian.PutUint64(id[4:12], hi)
	binary.BigEndian.PutUint32(id[12:16], lo)
	id[6] = id[6]&0x0f | 0x80 // version 8
	id[8] = id[8]&0x3f | 0x80 // RFC 9562 variant
	return id
}

// MaxSaleID is the largest sale id: order ids carry it in 32 bits.
const MaxSaleID = 1<<32 - 1

// SaleID returns the sale the order belongs to.
func (id OrderID) SaleID() int64 { return int64(binary.BigEndian.Uint32(id[0:4])) }

const hexDigits = "0123456789abcdef"

// AppendText appends the canonical 36-character form of id.
func (id OrderID) AppendText(dst []byte) []byte {
	for i, b := range id {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[b>>4], hexDigits[b&0x0f])
	}
	return dst
}

// String returns the canonical form of id.
func (id OrderID) String() string { return string(id.AppendText(make([]byte, 0, 36))) }

// ParseOrderID parses the canonical lower- or upper-case form of an order id. It
// reports false for anything else, including UUIDs of another version.
func ParseOrderID(s []byte) (OrderID, bool) {
	var id OrderID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return id, false
	}
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
			continue
		}
		h, ok1 := unhex(s[i])
		l, ok2 := unhex(s[i+1])
		if !ok1 || !ok2 {
			return id, false
		}
		id[j] = h<<4 | l
		j++
		i += 2
	}
	if id[6]>>4 != 8 || id[8]>>6 != 2 {
		return id, false
	}
	return id, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
