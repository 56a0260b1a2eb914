package lab

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// Link is one host's link to one service: a Toxiproxy proxy.
type Link struct {
	From  *Host
	To    Endpoint
	proxy *toxiproxy.Proxy
	mu    sync.Mutex
	names []string // the toxics on it now
}

// Direction is a link's way: Up from the host to the service, Down back.
type Direction string

const (
	Up   Direction = "upstream"
	Down Direction = "downstream"
	Both Direction = "both"
)

func (d Direction) streams() []string {
	if d == Both {
		return []string{string(Up), string(Down)}
	}
	return []string{string(d)}
}

func (k *Link) String() string { return k.From.Name + "->" + k.To.String() }

// Delay adds latency one way each direction, so a round trip takes 2d more,
// with jitter up to j either way (both to the microsecond).
func (k *Link) Delay(d, j time.Duration) error {
	return k.add("delay", Both, fmt.Sprintf(`{"us":%d,"jitter_us":%d}`, d.Microseconds(), j.Microseconds()), "delay_us")
}

// Cut stops the link's bytes in dir: they wait (TCP would retransmit them)
// and go once Heal removes the cut. A cut one way is a one-way partition.
func (k *Link) Cut(dir Direction) error {
	return k.add("cut", dir, `{"timeout":0}`, "timeout")
}

// Bandwidth caps the link at kbs kilobytes a second each way.
func (k *Link) Bandwidth(kbs int64) error {
	return k.add("bandwidth", Both, fmt.Sprintf(`{"rate":%d}`, kbs), "bandwidth")
}

// Heal removes every toxic from the link.
func (k *Link) Heal() error {
	k.mu.Lock()
	names := k.names
	k.names = nil
	k.mu.Unlock()
	var errs []string
	for _, n := range names {
		if err := k.proxy.Toxics.RemoveToxic(context.Background(), n); err != nil {
			errs = append(errs, n+": "+err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("lab: healing %s: %s", k, strings.Join(errs, "; "))
	}
	return nil
}

// add puts a toxic of type typ with attributes attrs on the link in dir,
// replacing one of the same name.
func (k *Link) add(name string, dir Direction, attrs, typ string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, s := range dir.streams() {
		n := name + "_" + s
		for i, have := range k.names {
			if have == n {
				_ = k.proxy.Toxics.RemoveToxic(context.Background(), n)
				k.names = append(k.names[:i], k.names[i+1:]...)
				break
			}
		}
		body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"attributes":%s}`, n, typ, s, attrs)
		if _, err := k.proxy.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
			return fmt.Errorf("lab: %s on %s: %w", typ, k, err)
		}
		k.names = append(k.names, n)
	}
	return nil
}

// delayToxic is Toxiproxy's latency toxic to the microsecond (its own is
// whole milliseconds; links inside a zone take 0.1-1 ms).
type delayToxic struct {
	Us       int64 `json:"us"`
	JitterUs int64 `json:"jitter_us"`
}

func (t *delayToxic) GetBufferSize() int { return 1024 }

func (t *delayToxic) delay() time.Duration {
	d := t.Us
	if t.JitterUs > 0 {
		d += rand.Int64N(2*t.JitterUs) - t.JitterUs
	}
	return time.Duration(max(d, 0)) * time.Microsecond
}

func (t *delayToxic) Pipe(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			sleep := t.delay() - time.Since(c.Timestamp)
			if sleep > 0 {
				tm := time.NewTimer(sleep)
				select {
				case <-tm.C:
				case <-stub.Interrupt:
					tm.Stop()
					stub.Output <- c // drop nothing
					return
				}
			}
			stub.Output <- c
		}
	}
}

func init() { toxics.Register("delay_us", new(delayToxic)) }

// putClock sets the clock offset of the process whose admin listener is at
// admin (package sharding/clock's knob).
func putClock(ctx context.Context, admin string, d time.Duration) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+admin+"/debug/clock?offset="+d.String(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/debug/clock answered %s", resp.Status)
	}
	return nil
}
