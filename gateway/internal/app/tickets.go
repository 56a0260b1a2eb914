package app

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"log/slog"

	"flashsale/gateway/internal/config"
	"flashsale/gateway/internal/ticket"
)

// ticketKeys builds the purchase-ticket keys: the configured secrets, else a
// key derived from the HS256 secret (every gateway that shares the token
// secret then shares the ticket key, and a rotation of the token secret
// rotates it too), else, with only a JWKS, a random key valid on this gateway
// alone, which a log line says: a ticket-required sale behind several
// gateways then needs -ticket-secret-file.
func ticketKeys(cfg config.Config, log *slog.Logger) (*ticket.Keys, error) {
	cur, prev := []byte(cfg.TicketSecret), []byte(cfg.TicketSecretPrevious)
	if len(cur) == 0 && cfg.JWTSecret != "" {
		m := hmac.New(sha256.New, []byte(cfg.JWTSecret))
		m.Write([]byte("flashsale purchase ticket key v1"))
		cur = m.Sum(nil)
	}
	if len(cur) == 0 {
		log.Warn("no ticket secret and no HS256 secret: purchase tickets are signed with a random key and valid on this gateway only; set -ticket-secret-file")
		return ticket.Random(), nil
	}
	k, err := ticket.New(cur, prev, cfg.TicketTTL)
	if err != nil {
		return nil, fmt.Errorf("ticket secrets: %w", err)
	}
	return k, nil
}
