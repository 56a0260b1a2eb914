package store

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// IsTransient reports whether err is one that goes away by itself: PostgreSQL
// restarting or shutting down, a lost or refused connection, a timeout, a
// deadlock or serialization failure. Callers retry such errors with backoff
// and never treat them as a fault of the data.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch {
		case strings.HasPrefix(pg.Code, "08"): // connection exception
			return true
		case pg.Code == "57P01", pg.Code == "57P02", pg.Code == "57P03": // admin/crash shutdown, cannot connect now
			return true
		case pg.Code == "40001", pg.Code == "40P01": // serialization failure, deadlock
			return true
		case pg.Code == "53300", pg.Code == "55P03": // too many connections, lock not available
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	// pgx reports a connection it already found dead with a plain error.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "conn busy")
}
