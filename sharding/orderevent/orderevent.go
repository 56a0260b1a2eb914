// Package orderevent is the wire format of an order event, below both of its
// ends: the gateway's scripts journal it (reserve.lua, act.lua), the relay in
// package journal produces it to Kafka, and the writer consumes it. It has two
// encodings and one validation:
//
//   - the journal entry, a Redis stream entry of short fields written by the
//     scripts and read with FromFields (see Field*);
//
//   - the Kafka record, one JSON object keyed by item id so that every event
//     of one order lands in one partition, in order (AppendJSON, Decode):
//
//     {"v":1,"type":"reserved","orderId":"<uuid>","saleId":1,"itemId":7,"userId":42,
//     "createdAt":1764500000000,"expiresAt":1764500600000,"at":1764500000000}
//
// Times are unix milliseconds. Types are "reserved" (a 202 answered to a
// purchase), "pay" and "cancel" (the owner's requests, accepted with 202).
//
// Neither end trusts the other: both decoders end in Event.Validate, which
// checks the range of every field, so an entry a bad script wrote or a record
// a bad producer sent cannot become user -1 or an order that expires in the
// year 292278994. The relay dead-letters what FromFields refuses; the writer
// dead-letters what Decode refuses.
package orderevent

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"flashsale/sharding"
)

// Version is the current wire version; Decode refuses others.
const Version = 1

// DefaultTopic is the topic order events go to, DefaultDeadLetterTopic the
// one the writer sends undecodable records to, and DefaultGroup the writers'
// consumer group (whose lag flashctl reconcile reads too).
const (
	DefaultTopic           = "flash-sale-orders"
	DefaultDeadLetterTopic = "flash-sale-orders.dlq"
	DefaultGroup           = "flashsale-writer"
)

// Type is the kind of an event.
type Type uint8

// Event types.
const (
	Reserved Type = iota + 1
	Pay
	Cancel
)

var typeNames = [...]string{Reserved: "reserved", Pay: "pay", Cancel: "cancel"}

func (t Type) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// The ranges Decode accepts. Times are unix milliseconds: MinUnixMilli is
// 2020-01-01T00:00:00Z and MaxUnixMilli 2200-01-01T00:00:00Z, far from any
// real clock on either side. MaxPaymentWindow bounds expiresAt - createdAt:
// a payment window is minutes (sale.DefaultPaymentWindow is 10), and a
// week leaves room for any sale an operator means while refusing a record
// that would hold a unit for years.
const (
	MinUnixMilli     = 1_577_836_800_000
	MaxUnixMilli     = 7_258_118_400_000
	MaxPaymentWindow = 7 * 24 * time.Hour
)

// Event is one order event.
type Event struct {
	Type    Type
	OrderID sharding.OrderID
	SaleID  int64
	ItemID  int64
	UserID  uint64
	Created time.Time // when the unit was reserved
	Expires time.Time // end of the payment window
	At      time.Time // when the gateway accepted this event; must be set (Decode refuses the zero time)
}

// AppendJSON appends e's wire form to dst.
func AppendJSON(dst []byte, e *Event) []byte {
	dst = append(dst, `{"v":1,"type":"`...)
	dst = append(dst, e.Type.String()...)
	dst = append(dst, `","orderId":"`...)
	dst = e.OrderID.AppendText(dst)
	dst = append(dst, `","saleId":`...)
	dst = strconv.AppendInt(dst, e.SaleID, 10)
	dst = append(dst, `,"itemId":`...)
	dst = strconv.AppendInt(dst, e.ItemID, 10)
	dst = append(dst, `,"userId":`...)
	dst = strconv.AppendUint(dst, e.UserID, 10)
	dst = append(dst, `,"createdAt":`...)
	dst = strconv.AppendInt(dst, e.Created.UnixMilli(), 10)
	dst = append(dst, `,"expiresAt":`...)
	dst = strconv.AppendInt(dst, e.Expires.UnixMilli(), 10)
	dst = append(dst, `,"at":`...)
	dst = strconv.AppendInt(dst, e.At.UnixMilli(), 10)
	return append(dst, '}')
}

// AppendKey appends the record key of e: its item id in decimal.
func AppendKey(dst []byte, e *Event) []byte { return strconv.AppendInt(dst, e.ItemID, 10) }

// ErrMalformed wraps every reason Decode, FromFields or Validate refuses an
// event.
var ErrMalformed = errors.New("malformed order event")

func malformed(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, a...)...)
}

// Validate checks the range of every field of e and names, in its error, the
// JSON member at fault: type is a known Type; orderId is a flash-sale order
// id of sale saleId; saleId is in 1..sharding.MaxSaleID; itemId and userId
// are in 1..math.MaxInt64 (user ids become PostgreSQL bigints); createdAt,
// expiresAt and at are in MinUnixMilli..MaxUnixMilli; expiresAt is after
// createdAt by at most MaxPaymentWindow.
func (e *Event) Validate() error {
	switch {
	case int(e.Type) >= len(typeNames) || typeNames[e.Type] == "":
		return malformed("type %d is not reserved, pay or cancel", e.Type)
	case e.SaleID <= 0 || e.SaleID > sharding.MaxSaleID:
		return malformed("saleId %d not in 1..%d", e.SaleID, int64(sharding.MaxSaleID))
	case e.OrderID.SaleID() != e.SaleID:
		return malformed("orderId belongs to sale %d, saleId says %d", e.OrderID.SaleID(), e.SaleID)
	case e.ItemID <= 0:
		return malformed("itemId %d not in 1..%d", e.ItemID, int64(math.MaxInt64))
	case e.UserID == 0 || e.UserID > math.MaxInt64:
		return malformed("userId %d not in 1..%d", e.UserID, int64(math.MaxInt64))
	}
	for _, t := range [...]struct {
		name string
		v    time.Time
	}{{"createdAt", e.Created}, {"expiresAt", e.Expires}, {"at", e.At}} {
		if ms := t.v.UnixMilli(); t.v.IsZero() || ms < MinUnixMilli || ms > MaxUnixMilli {
			return malformed("%s %d not in %d..%d (unix ms, 2020 to 2200)", t.name, ms, int64(MinUnixMilli), int64(MaxUnixMilli))
		}
	}
	switch window := e.Expires.Sub(e.Created); {
	case window <= 0:
		return malformed("expiresAt %d not after createdAt %d", e.Expires.UnixMilli(), e.Created.UnixMilli())
	case window > MaxPaymentWindow:
		return malformed("expiresAt %d more than %v after createdAt %d", e.Expires.UnixMilli(), MaxPaymentWindow, e.Created.UnixMilli())
	}
	return nil
}

// parseType returns the Type named s, or 0.
func parseType(s string) Type {
	for t, name := range typeNames {
		if name != "" && name == s {
			return Type(t)
		}
	}
	return 0
}

type wire struct {
	V         *int    `json:"v"`
	Type      string  `json:"type"`
	OrderID   string  `json:"orderId"`
	SaleID    *int64  `json:"saleId"`
	ItemID    *int64  `json:"itemId"`
	UserID    *uint64 `json:"userId"`
	CreatedAt *int64  `json:"createdAt"`
	ExpiresAt *int64  `json:"expiresAt"`
	At        *int64  `json:"at"`
}

// Decode parses one Kafka record value. Any error wraps ErrMalformed and says
// what is wrong, naming the member: the writer dead-letters such records
// with that reason. Every member AppendJSON writes is required (unknown ones
// are ignored), v must be Version, and the event must pass Validate.
func Decode(b []byte) (Event, error) {
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return Event{}, malformed("%v", err)
	}
	for _, m := range [...]struct {
		name    string
		missing bool
	}{
		{"v (version)", w.V == nil}, {"saleId", w.SaleID == nil}, {"itemId", w.ItemID == nil},
		{"userId", w.UserID == nil}, {"createdAt", w.CreatedAt == nil},
		{"expiresAt", w.ExpiresAt == nil}, {"at", w.At == nil},
	} {
		if m.missing {
			return Event{}, malformed("%s missing", m.name)
		}
	}
	if *w.V != Version {
		return Event{}, malformed("v (version) %d is not %d", *w.V, Version)
	}
	e := Event{Type: parseType(w.Type), SaleID: *w.SaleID, ItemID: *w.ItemID, UserID: *w.UserID}
	if e.Type == 0 {
		return Event{}, malformed("type %q is not reserved, pay or cancel", w.Type)
	}
	id, ok := sharding.ParseOrderID([]byte(w.OrderID))
	if !ok {
		return Event{}, malformed("orderId %q is not a flash-sale order id", w.OrderID)
	}
	e.OrderID = id
	var err error
	if e.Created, err = unixMilli("createdAt", *w.CreatedAt); err != nil {
		return Event{}, err
	}
	if e.Expires, err = unixMilli("expiresAt", *w.ExpiresAt); err != nil {
		return Event{}, err
	}
	if e.At, err = unixMilli("at", *w.At); err != nil {
		return Event{}, err
	}
	return e, e.Validate()
}

// unixMilli is the time of ms, refused before it can overflow time.Time's
// arithmetic (Validate then checks the range the writer takes).
func unixMilli(name string, ms int64) (time.Time, error) {
	if ms < MinUnixMilli || ms > MaxUnixMilli {
		return time.Time{}, malformed("%s %d not in %d..%d (unix ms, 2020 to 2200)", name, ms, int64(MinUnixMilli), int64(MaxUnixMilli))
	}
	return time.UnixMilli(ms).UTC(), nil
}
