// Package orderevent is the wire format of the events the gateway hands to
// Kafka and the writer consumes: one JSON object per record, keyed by item id so
// that every event of one order lands in one partition, in order.
//
//	{"v":1,"type":"reserved","orderId":"<uuid>","saleId":1,"itemId":7,"userId":42,
//	 "createdAt":1764500000000,"expiresAt":1764500600000}
//
// Times are unix milliseconds. Types are "reserved" (a 202 answered to a
// purchase), "pay" and "cancel" (the owner's requests, accepted with 202).
package orderevent

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"flashsale/sharding"
)

// Version is the current wire version; Decode refuses others.
const Version = 1

// DefaultTopic is the topic order events go to, and DefaultDeadLetterTopic the
// one the writer sends undecodable records to.
const (
	DefaultTopic           = "flash-sale-orders"
	DefaultDeadLetterTopic = "flash-sale-orders.dlq"
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

// Event is one order event.
type Event struct {
	Type    Type
	OrderID sharding.OrderID
	SaleID  int64
	ItemID  int64
	UserID  uint64
	Created time.Time // when the unit was reserved
	Expires time.Time // end of the payment window
	At      time.Time // when the gateway accepted this event
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
	At        int64   `json:"at"`
}

// ErrMalformed wraps every reason Decode refuses a record.
var ErrMalformed = errors.New("malformed order event")

// Decode parses one record value. Any error wraps ErrMalformed and says what is
// wrong: the writer dead-letters such records with that reason.
func Decode(b []byte) (Event, error) {
	var w wire
	var e Event
	if err := json.Unmarshal(b, &w); err != nil {
		return e, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	switch {
	case w.V == nil || *w.V != Version:
		return e, fmt.Errorf("%w: version missing or not %d", ErrMalformed, Version)
	case w.SaleID == nil || *w.SaleID <= 0 || *w.SaleID > sharding.MaxSaleID:
		return e, fmt.Errorf("%w: saleId missing or out of range", ErrMalformed)
	case w.ItemID == nil || *w.ItemID <= 0:
		return e, fmt.Errorf("%w: itemId missing or not positive", ErrMalformed)
	case w.UserID == nil || *w.UserID == 0:
		return e, fmt.Errorf("%w: userId missing or zero", ErrMalformed)
	case w.CreatedAt == nil || w.ExpiresAt == nil || *w.ExpiresAt < *w.CreatedAt:
		return e, fmt.Errorf("%w: createdAt/expiresAt missing or reversed", ErrMalformed)
	}
	for t, name := range typeNames {
		if name != "" && name == w.Type {
			e.Type = Type(t)
		}
	}
	if e.Type == 0 {
		return e, fmt.Errorf("%w: unknown type %q", ErrMalformed, w.Type)
	}
	id, ok := sharding.ParseOrderID([]byte(w.OrderID))
	if !ok {
		return e, fmt.Errorf("%w: orderId %q is not a flash-sale order id", ErrMalformed, w.OrderID)
	}
	if id.SaleID() != *w.SaleID {
		return e, fmt.Errorf("%w: orderId belongs to sale %d, event says %d", ErrMalformed, id.SaleID(), *w.SaleID)
	}
	e.OrderID, e.SaleID, e.ItemID, e.UserID = id, *w.SaleID, *w.ItemID, *w.UserID
	e.Created, e.Expires = time.UnixMilli(*w.CreatedAt).UTC(), time.UnixMilli(*w.ExpiresAt).UTC()
	e.At = time.UnixMilli(w.At).UTC()
	return e, nil
}
