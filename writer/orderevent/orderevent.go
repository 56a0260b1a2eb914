// Package orderevent is the wire format of the events the gateway hands to
// Kafka and the writer consumes: one JSON object per record, keyed by item id so
// that every event of one order lands in one partition, in order.
//
//	{"v":1,"type":"reserved","orderId":"<uuid>","saleId":1,"itemId":7,"userId":42,
//	 "createdAt":1764500000000,"expiresAt":1764500600000}
//
// Times are unix milliseconds. Types are "reserved" (a 202 answered to a
// purchase), "pay" and "cancel" (the owner's requests, accepted with 202).
//
// The writer does not trust the topic: Decode checks the range of every
// field before anything reaches PostgreSQL (see Decode), so a record that a
// bad producer wrote cannot become user -1 or an order that expires in the
// year 292278994.
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
// a payment window is minutes (sharding.DefaultPaymentWindow is 10), and a
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

// ErrMalformed wraps every reason Decode refuses a record.
var ErrMalformed = errors.New("malformed order event")

// Decode parses one record value. Any error wraps ErrMalformed and says what is
// wrong, naming the field: the writer dead-letters such records with that
// reason. Every field AppendJSON writes is required (unknown ones are
// ignored), and each must be in range: v is Version; type is a known Type;
// orderId is a flash-sale order id of sale saleId; saleId is in
// 1..sharding.MaxSaleID; itemId and userId are in 1..math.MaxInt64 (user ids
// become PostgreSQL bigints); createdAt, expiresAt and at are in
// MinUnixMilli..MaxUnixMilli; expiresAt is after createdAt by at most
// MaxPaymentWindow.
func Decode(b []byte) (Event, error) {
	var w wire
	var e Event
	if err := json.Unmarshal(b, &w); err != nil {
		return e, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	bad := func(format string, a ...any) (Event, error) {
		return Event{}, fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, a...)...)
	}
	switch {
	case w.V == nil || *w.V != Version:
		return bad("v (version) missing or not %d", Version)
	case w.SaleID == nil:
		return bad("saleId missing")
	case *w.SaleID <= 0 || *w.SaleID > sharding.MaxSaleID:
		return bad("saleId %d not in 1..%d", *w.SaleID, int64(sharding.MaxSaleID))
	case w.ItemID == nil:
		return bad("itemId missing")
	case *w.ItemID <= 0:
		return bad("itemId %d not in 1..%d", *w.ItemID, int64(math.MaxInt64))
	case w.UserID == nil:
		return bad("userId missing")
	case *w.UserID == 0 || *w.UserID > math.MaxInt64:
		return bad("userId %d not in 1..%d", *w.UserID, int64(math.MaxInt64))
	}
	for _, t := range []struct {
		name string
		v    *int64
	}{{"createdAt", w.CreatedAt}, {"expiresAt", w.ExpiresAt}, {"at", w.At}} {
		switch {
		case t.v == nil:
			return bad("%s missing", t.name)
		case *t.v < MinUnixMilli || *t.v > MaxUnixMilli:
			return bad("%s %d not in %d..%d (unix ms, 2020 to 2200)", t.name, *t.v, int64(MinUnixMilli), int64(MaxUnixMilli))
		}
	}
	switch window := *w.ExpiresAt - *w.CreatedAt; {
	case window <= 0:
		return bad("expiresAt %d not after createdAt %d", *w.ExpiresAt, *w.CreatedAt)
	case window > MaxPaymentWindow.Milliseconds():
		return bad("expiresAt %d more than %v after createdAt %d", *w.ExpiresAt, MaxPaymentWindow, *w.CreatedAt)
	}
	for t, name := range typeNames {
		if name != "" && name == w.Type {
			e.Type = Type(t)
		}
	}
	if e.Type == 0 {
		return bad("type %q is not reserved, pay or cancel", w.Type)
	}
	id, ok := sharding.ParseOrderID([]byte(w.OrderID))
	if !ok {
		return bad("orderId %q is not a flash-sale order id", w.OrderID)
	}
	if id.SaleID() != *w.SaleID {
		return bad("orderId belongs to sale %d, saleId says %d", id.SaleID(), *w.SaleID)
	}
	e.OrderID, e.SaleID, e.ItemID, e.UserID = id, *w.SaleID, *w.ItemID, *w.UserID
	e.Created, e.Expires = time.UnixMilli(*w.CreatedAt).UTC(), time.UnixMilli(*w.ExpiresAt).UTC()
	e.At = time.UnixMilli(*w.At).UTC()
	return e, nil
}
