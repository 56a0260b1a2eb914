package load

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// portableWorker is a worker of the portable engine: fasthttp's client, one
// goroutine and one keep-alive connection (a HostClient of one connection)
// per connection of the worker's share, taking actions from the worker's
// sched under its lock. Same schedule, same recorder, same results as the
// epoll engine; it runs anywhere Go does and speaks https.
type portableWorker struct {
	sched
	mu   sync.Mutex
	busy int
	hcs  []*fasthttp.HostClient
}

func (e *Engine) newPortableWorker(id int, sh *shared) runner {
	w := &portableWorker{sched: newSched(e, sh, id)}
	for i := range e.share(id) {
		w.hcs = append(w.hcs, e.hostClient(id, i))
	}
	return w
}

// hostClient is connection i of worker id.
func (e *Engine) hostClient(id, i int) *fasthttp.HostClient {
	hc := &fasthttp.HostClient{Addr: e.o.Addr, MaxConns: 1, IsTLS: e.o.TLS, ReadTimeout: e.o.Timeout, WriteTimeout: e.o.Timeout,
		MaxIdleConnDuration: time.Hour, NoDefaultUserAgentHeader: true, DisablePathNormalizing: true,
		DisableHeaderNamesNormalizing: true, MaxIdemponentCallAttempts: 1}
	if e.o.TLS {
		name := e.o.ServerName
		if name == "" {
			name, _, _ = net.SplitHostPort(e.o.Addr)
		}
		hc.TLSConfig = &tls.Config{ServerName: name, InsecureSkipVerify: e.o.Insecure} //nolint:gosec // -insecure is the user's choice for self-signed targets
	}
	d := &net.Dialer{Timeout: e.o.Timeout}
	if n := len(e.o.SourceAddrs); n > 0 {
		d.LocalAddr = &net.TCPAddr{IP: e.o.SourceAddrs[(i*e.o.Workers+id)%n].AsSlice()}
	}
	target := e.target.String()
	hc.Dial = func(string) (net.Conn, error) { return d.Dial("tcp", target) }
	return hc
}

func (w *portableWorker) run() {
	var wg sync.WaitGroup
	for _, hc := range w.hcs {
		wg.Go(func() { w.loop(hc) })
	}
	wg.Wait()
}

func (w *portableWorker) closeAll() {
	for _, hc := range w.hcs {
		hc.CloseIdleConnections()
	}
}

// loop is one connection: take the next due action, send it, record the
// answer, until the worker has nothing left.
func (w *portableWorker) loop(hc *fasthttp.HostClient) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	var buf []byte
	rd := bytes.NewReader(nil)
	br := bufio.NewReaderSize(rd, 4096)
	for {
		act, at, wait, done := w.take()
		if done {
			return
		}
		if wait > 0 {
			time.Sleep(time.Duration(wait))
			continue
		}
		buf = w.e.rb.appendRequest(buf[:0], &act)
		rd.Reset(buf)
		br.Reset(rd)
		req.Reset()
		err := req.Read(br)
		if err == nil && w.e.o.TLS {
			req.URI().SetScheme("https")
		}
		sent := w.elapsed()
		if err == nil {
			err = hc.DoTimeout(req, resp, w.e.o.Timeout)
		}
		w.answer(&act, at, sent, resp, err)
	}
}

// take returns the next due action and its intended time; or how long to
// wait for one (ns); or done when the worker has nothing left.
func (w *portableWorker) take() (act Action, at, wait int64, done bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.elapsed()
	w.checkStop(now)
	a, at, ok := w.next(now)
	if !ok || at > now+int64(20*time.Microsecond) {
		if w.busy == 0 && w.drained() || w.stopping && now-w.stopAt > int64(w.e.o.Timeout) {
			return act, 0, 0, true
		}
		wait = int64(time.Millisecond)
		if ok {
			wait = min(wait, at-now)
		}
		return act, 0, wait, false
	}
	act = *a
	w.busy++
	w.rec.live.inflight.Store(int64(w.busy))
	w.rec.recordSend(now, now-at, int64(w.e.o.LateBy), false)
	return act, at, 0, false
}

// answer records the outcome of act, sent at sent (ns), and schedules what
// the user does next.
func (w *portableWorker) answer(act *Action, at, sent int64, resp *fasthttp.Response, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.elapsed()
	w.busy--
	w.rec.live.inflight.Store(int64(w.busy))
	if err != nil {
		w.rec.recordFailure(act.Kind, failureOf(err), now)
		w.afterFailure(act, now)
		return
	}
	body := resp.Body()
	ra, _ := strconv.Atoi(string(resp.Header.Peek("Retry-After")))
	st := resp.StatusCode()
	w.rec.recordResponse(act.Kind, st, jsonString(body, `"error"`), now, now-at, now-sent)
	w.afterResponse(act, st, body, ra, now)
}

// failureOf classifies a client error as the epoll engine does.
func failureOf(err error) int {
	var op *net.OpError
	switch {
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout):
		return ErrTimeout
	case errors.As(err, &op) && op.Op == "dial":
		return ErrConnect
	case errors.Is(err, fasthttp.ErrConnectionClosed):
		return ErrRead
	}
	var te *tls.CertificateVerificationError
	if errors.As(err, &te) {
		return ErrConnect
	}
	return ErrRead
}
