package testenv

import (
	"sync"
	"testing"
	"time"
)

// Shoppers is a crowd of goroutines buying in a loop while a test does
// something else to the sale (a reshard, a failover).
type Shoppers struct {
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// StartShoppers starts n workers. Each calls shop, then sleeps pause, over and
// over, until Stop is called or shop returns false (the crowd is used up, or
// shop met an error it reported). Stop is also registered with t.Cleanup, so
// the workers end before the test does, also after a t.Fatal.
func StartShoppers(t testing.TB, n int, pause time.Duration, shop func() bool) *Shoppers {
	s := &Shoppers{stop: make(chan struct{})}
	for range n {
		s.wg.Go(func() {
			for {
				select {
				case <-s.stop:
					return
				default:
				}
				if !shop() {
					return
				}
				time.Sleep(pause)
			}
		})
	}
	t.Cleanup(s.Stop)
	return s
}

// Stop stops the workers and waits for them; calling it again does nothing.
func (s *Shoppers) Stop() {
	s.once.Do(func() { close(s.stop); s.wg.Wait() })
}
