package app

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"log/slog"

	"github.com/redis/rueidis"

	"flashsale/gateway/internal/catalog"
	"flashsale/gateway/internal/config"
	"flashsale/gateway/internal/mac"
	"flashsale/gateway/internal/pow"
	"flashsale/gateway/internal/room"
	"flashsale/sharding/draw/beacon"
	"flashsale/sharding/sale"
)

// frontDoor builds the waiting room and raffle and the proof-of-work issuer.
// Their keys are derived from the ticket secrets (or, as the ticket key is,
// from the HS256 secret), one label each, so every gateway that shares the
// ticket key shares them and a ticket rotation rotates them (the previous
// secret still checks passes and challenges). With neither secret the keys
// are random: passes and proofs then hold on this gateway only. acks (the
// batcher, nil without one) carries the entries, as it does purchases, so
// that a 202 QUEUED outlives a failover.
func frontDoor(cfg config.Config, c rueidis.Client, acks room.Acker, log *slog.Logger) (*room.Room, *pow.Issuer, error) {
	passes, err := derivedRing(cfg, "flashsale queue pass v1")
	if err != nil {
		return nil, nil, err
	}
	proofs, err := derivedRing(cfg, "flashsale proof of work v1")
	if err != nil {
		return nil, nil, err
	}
	src := &beacon.Fetcher{Relays: cfg.BeaconRelays, Dev: cfg.Beacon == "dev"}
	r, err := room.New(c, room.Config{Ring: passes, Acks: acks, Log: log, Beacon: src})
	if err != nil {
		return nil, nil, err
	}
	src.Refused = func(relay string, err error) {
		r.Beacons.Refused.Add(1)
		log.Error("a beacon relay answered a round that is not the chain's: refused", "relay", relay, "err", err)
	}
	return r, pow.NewIssuer(proofs, cfg.PowTTL), nil
}

func derivedRing(cfg config.Config, label string) (*mac.Ring, error) {
	derive := func(secret string) []byte {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(label))
		return m.Sum(nil)
	}
	var cur, prev []byte
	switch {
	case cfg.TicketSecret != "":
		cur = derive(cfg.TicketSecret)
		if cfg.TicketSecretPrevious != "" {
			prev = derive(cfg.TicketSecretPrevious)
		}
	case cfg.JWTSecret != "":
		cur = derive(cfg.JWTSecret)
	default:
		cur = make([]byte, 32)
		_, _ = rand.Read(cur) // crypto/rand.Read never fails on supported platforms
	}
	r, err := mac.NewRing(cur, prev)
	if err != nil {
		return nil, fmt.Errorf("%s key: %w", label, err)
	}
	return r, nil
}

// roomSource lists the catalog's sales with a waiting room or raffle for
// Room's tick, and their units left (0 while an operator paused the sale, so
// nobody is admitted into a pause).
type roomSource struct{ c *catalog.Catalog }

func (s roomSource) Rooms() []room.Sale {
	var out []room.Sale
	for _, sl := range s.c.Snapshot().Sales() {
		if sl.InRoom {
			out = append(out, sl.Room)
		}
	}
	return out
}

// PresaleSales lists the catalog's sales with a presale.
func (s roomSource) PresaleSales() []*sale.Sale {
	var out []*sale.Sale
	for _, sl := range s.c.Snapshot().Sales() {
		if sl.Presale != nil {
			out = append(out, sl.Sale)
		}
	}
	return out
}

func (s roomSource) Remaining(saleID int64) int64 {
	sl := s.c.Snapshot().Sale(saleID)
	if sl == nil {
		return -1
	}
	if sl.Halt != catalog.HaltNone {
		return 0 // paused or ended: the cursor holds
	}
	return sl.Remaining()
}
