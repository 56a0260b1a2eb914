package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"flashsale/sharding/repeatlog"
)

// ServerConfig hardens the public fasthttp server.
type ServerConfig struct {
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	MaxConnsPerIP, Concurrency             int
	Log                                    *slog.Logger // fasthttp's own errors (unparsable requests); nil: slog.Default
}

// Request limits of the public server: bodies are tiny JSON or empty, and a
// request's headers must fit the read buffer.
const (
	MaxRequestBodySize = 4 << 10
	ReadBufferSize     = 8 << 10
)

// NewServer returns the public server for handler. It skips the work
// fasthttp's defaults do per response that this API does not need (the Server
// and Date headers, the default content type, header name normalising).
func NewServer(handler fasthttp.RequestHandler, c ServerConfig) *fasthttp.Server {
	return &fasthttp.Server{
		Handler:                       handler,
		Name:                          "flashsale-gateway",
		ReadTimeout:                   c.ReadTimeout,
		WriteTimeout:                  c.WriteTimeout,
		IdleTimeout:                   c.IdleTimeout,
		MaxConnsPerIP:                 c.MaxConnsPerIP,
		Concurrency:                   c.Concurrency,
		MaxRequestBodySize:            MaxRequestBodySize,
		ReadBufferSize:                ReadBufferSize,
		NoDefaultServerHeader:         true,
		NoDefaultDate:                 true,
		NoDefaultContentType:          true,
		DisableHeaderNamesNormalizing: true,
		ReduceMemoryUsage:             false,
		CloseOnShutdown:               true,
		ErrorHandler:                  parseError,
		Logger:                        &connLog{log: c.Log},
	}
}

// parseError answers a request fasthttp could not read (it never reached the
// handler) with the API's JSON error body instead of fasthttp's plain text.
func parseError(ctx *fasthttp.RequestCtx, err error) {
	var small *fasthttp.ErrSmallBuffer
	var nerr net.Error
	a := aUnparsable
	switch {
	case errors.As(err, &small):
		a = aHeadersTooLarge
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		a = aBodyTooLarge
	case errors.As(err, &nerr) && nerr.Timeout():
		a = aRequestTimeout
	}
	spec := &answers[a]
	ctx.Response.Reset()
	ctx.Response.SetStatusCode(spec.status)
	ctx.Response.Header.SetContentTypeBytes(contentJSON)
	ctx.Response.SetBodyRaw(spec.body)
}

// connLog takes fasthttp's own log lines (a connection whose request could
// not be parsed, mostly). fasthttp quotes the raw request in them, bearer
// token included, and writes one per bad request: connLog cuts the quoted
// request off and logs through slog, one line per repeatlog.Every with the
// count of the lines left out, so that a client sending garbage can neither
// leak tokens into the log nor flood it.
type connLog struct {
	log   *slog.Logger
	fails repeatlog.Failure
}

func (l *connLog) Printf(format string, args ...any) {
	log := l.log
	if log == nil {
		log = slog.Default()
	}
	l.fails.Failed(log, time.Now(), "public port: request not served", "err", redact(fmt.Sprintf(format, args...)))
}

// redact cuts a fasthttp error line before the request bytes it quotes
// ("Buffer size=..., contents: ...", or anything from an Authorization
// header on).
func redact(s string) string {
	for _, cut := range []string{"Buffer size=", "contents:", "Authorization", "authorization", "Bearer"} {
		if i := strings.Index(s, cut); i >= 0 {
			s = s[:i] + "[request bytes left out]"
		}
	}
	return s
}
