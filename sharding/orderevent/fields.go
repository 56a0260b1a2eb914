package orderevent

import (
	"strconv"
	"strings"
	"time"

	"flashsale/sharding"
)

// The journal entry's field names, as reserve.lua, reserve_many.lua and
// act.lua write them (XADD ... t <type> o <order id> ...; a test checks the
// scripts against this list). FieldAt is optional: a reservation is accepted
// when it is created, so reserve.lua leaves it out and FromFields takes
// FieldCreated's value.
//
// Two versions of the reservation's entry decode: the first (type
// "reserved", with FieldSale), which releases before the lazy order record
// wrote and which may still sit in a journal after an upgrade, and the
// second, which the reserve scripts write: type JournalReserved and no
// FieldSale (the order id's first four bytes are the sale id). Pay and
// cancel entries keep their one form. A version-two entry reaches only a
// relay of this release or later: relays run in the gateways, so gateways
// are upgraded between sales, when the journals have drained (see
// deploy/README.md).
const (
	FieldType    = "t"  // "reserved" or JournalReserved, "pay" or "cancel"
	FieldOrder   = "o"  // order id
	FieldSale    = "s"  // sale id (first version and pay, cancel: the order id's own)
	FieldItem    = "i"  // item id
	FieldUser    = "u"  // user id
	FieldCreated = "c"  // unix ms
	FieldExpires = "x"  // unix ms
	FieldAt      = "at" // unix ms, pay and cancel only
)

// JournalReserved is the type of a version-two reservation entry.
const JournalReserved = "r"

// Fields lists every field name a journal entry may hold.
var Fields = [...]string{FieldType, FieldOrder, FieldSale, FieldItem, FieldUser, FieldCreated, FieldExpires, FieldAt}

// FromFields decodes a journal entry's fields (data from another process:
// Redis) into the event it journals. Any error wraps ErrMalformed and names
// the field by its JSON member name, then its journal name.
func FromFields(f map[string]string) (Event, error) {
	t := f[FieldType]
	if t == JournalReserved {
		t = typeNames[Reserved]
	}
	e := Event{Type: parseType(t)}
	if e.Type == 0 {
		return Event{}, malformed("type (%s) %q is not reserved, pay or cancel", FieldType, f[FieldType])
	}
	id, ok := sharding.ParseOrderID([]byte(f[FieldOrder]))
	if !ok {
		return Event{}, malformed("orderId (%s) %q is not a flash-sale order id", FieldOrder, f[FieldOrder])
	}
	e.OrderID = id
	var err error
	if _, ok := f[FieldSale]; ok || f[FieldType] != JournalReserved {
		if e.SaleID, err = intField(f, "saleId", FieldSale); err != nil {
			return Event{}, err // (Validate checks it is the order id's)
		}
	} else {
		e.SaleID = id.SaleID()
	}
	if e.ItemID, err = intField(f, "itemId", FieldItem); err != nil {
		return Event{}, err
	}
	if e.UserID, err = strconv.ParseUint(f[FieldUser], 10, 64); err != nil {
		return Event{}, malformed("userId (%s) %q: %v", FieldUser, f[FieldUser], err.(*strconv.NumError).Err)
	}
	if e.Created, err = timeField(f, "createdAt", FieldCreated); err != nil {
		return Event{}, err
	}
	if e.Expires, err = timeField(f, "expiresAt", FieldExpires); err != nil {
		return Event{}, err
	}
	e.At = e.Created
	if _, ok := f[FieldAt]; ok {
		if e.At, err = timeField(f, "at", FieldAt); err != nil {
			return Event{}, err
		}
	}
	return e, e.Validate()
}

func intField(f map[string]string, name, field string) (int64, error) {
	n, err := strconv.ParseInt(f[field], 10, 64)
	if err != nil {
		return 0, malformed("%s (%s) %q: %v", name, field, f[field], err.(*strconv.NumError).Err)
	}
	return n, nil
}

func timeField(f map[string]string, name, field string) (time.Time, error) {
	ms, err := intField(f, name, field)
	if err != nil {
		return time.Time{}, err
	}
	return unixMilli(name, ms)
}

// JournalHeader is the key of the Kafka record header in which the relay
// names where it read the event: "<shard tag> <journal entry id> <prev>",
// prev being the entry of the same shard and item that the relay produced
// just before it ("0-0" for the first): the item's chain. The writer raises
// that shard's persisted watermark of the item from it once PostgreSQL
// holds the event, and only over an unbroken chain (see
// lua/persisted_upto.lua). A record without it (an older relay's) or without
// its prev (one relay release older) is marked persisted order by order.
const JournalHeader = "j"

// NoPrev is the chain's start: the prev of an item's first entry on a shard.
const NoPrev = "0-0"

// Position is where in a shard's journal the relay read an event.
type Position struct {
	Shard string // the shard's hash tag
	Entry string // the journal entry id, <ms>-<seq>
	// Prev is the entry of the same shard and item produced just before
	// this one (NoPrev for the first); "" when the relay named none.
	Prev string
}

// AppendPosition appends the JournalHeader value naming p.
func AppendPosition(dst []byte, p Position) []byte {
	dst = append(dst, p.Shard...)
	dst = append(dst, ' ')
	dst = append(dst, p.Entry...)
	if p.Prev != "" {
		dst = append(dst, ' ')
		dst = append(dst, p.Prev...)
	}
	return dst
}

// ParsePosition decodes a JournalHeader value (data from another process:
// the tag must be non-empty and free of spaces and braces, the entry id a
// stream entry id, the prev, when there, a stream entry id before it).
func ParsePosition(v []byte) (Position, bool) {
	s := string(v)
	tag, rest, ok := strings.Cut(s, " ")
	if !ok || tag == "" || strings.ContainsAny(tag, " {}") {
		return Position{}, false
	}
	id, prev, chained := strings.Cut(rest, " ")
	if !sharding.ValidEntryID(id) {
		return Position{}, false
	}
	if chained && (!sharding.ValidEntryID(prev) || !sharding.EntryBefore(prev, id)) {
		return Position{}, false
	}
	return Position{Shard: tag, Entry: id, Prev: prev}, true
}
