//go:build !linux

package load

import (
	"errors"
	"net/netip"
)

// epollAvailable: the epoll engine is Linux only; elsewhere every run is on
// the portable engine.
const epollAvailable = false

type sysTarget struct{}

func newSysTarget(netip.AddrPort, []netip.Addr) sysTarget { return sysTarget{} }

func (e *Engine) newEpollWorker(int, *shared) (runner, error) {
	return nil, errors.New("load: the epoll engine needs Linux")
}
