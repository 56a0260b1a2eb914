package config

import (
	"io"
	"log/slog"
)

// Logger returns a slog.Logger writing to w at l.Level in l.Format (JSON
// lines for "json", logfmt-like text otherwise).
func (l Log) Logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: l.Level}
	if l.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
