package httpapi

import (
	"time"

	"github.com/valyala/fasthttp"
)

// ServerConfig hardens the public fasthttp server.
type ServerConfig struct {
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	MaxConnsPerIP, Concurrency             int
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
	}
}
