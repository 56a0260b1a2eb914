package app

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// stockSample is one reading of the gateway's stock gauge at an instant.
type stockSample struct {
	at   time.Time
	left map[string]int64
}

// stockSampler reads the gateway's /metrics every interval while a run goes
// on and keeps the units left per item: the gauge is any gauge family whose
// name has "stock" in it and whose series carry an "item" label (summed over
// the other labels, e.g. the shard). A target without such a gauge gives no
// samples, and the report says so.
type stockSampler struct {
	url     string
	every   time.Duration
	client  *http.Client
	mu      sync.Mutex
	samples []stockSample
	lastErr error
}

func newStockSampler(url string, every time.Duration) *stockSampler {
	return &stockSampler{url: url, every: every, client: &http.Client{Timeout: time.Second}}
}

// run samples until ctx ends.
func (s *stockSampler) run(ctx context.Context) {
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		s.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *stockSampler) sample(ctx context.Context) {
	now := time.Now()
	left, err := s.read(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.lastErr = err
		return
	}
	if len(left) > 0 {
		s.samples = append(s.samples, stockSample{at: now, left: left})
	}
}

// read fetches and parses one exposition.
func (s *stockSampler) read(ctx context.Context) (map[string]int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", s.url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", s.url, err)
	}
	return stockOf(fams), nil
}

// stockOf sums the stock gauge's series per item. Of several gauges with
// "stock" in their name and an item label, one with "left" in its name wins,
// else the shortest name (drift and the like are longer).
func stockOf(fams map[string]*dto.MetricFamily) map[string]int64 {
	best := ""
	for name, f := range fams {
		if f.GetType() != dto.MetricType_GAUGE || !strings.Contains(name, "stock") || strings.Contains(name, "drift") || !hasItemLabel(f) {
			continue
		}
		better := strings.Contains(name, "left") && !strings.Contains(best, "left")
		same := strings.Contains(name, "left") == strings.Contains(best, "left")
		if best == "" || better || (same && (len(name) < len(best) || (len(name) == len(best) && name < best))) {
			best = name
		}
	}
	left := map[string]int64{}
	if best == "" {
		return left
	}
	for _, m := range fams[best].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "item" {
				left[l.GetValue()] += int64(m.GetGauge().GetValue())
			}
		}
	}
	return left
}

func hasItemLabel(f *dto.MetricFamily) bool {
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "item" {
				return true
			}
		}
	}
	return false
}

// result returns the samples and the last error seen.
func (s *stockSampler) result() ([]stockSample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, s.lastErr
}
