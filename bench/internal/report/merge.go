package report

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"flashsale/sharding"
)

// Merge combines the results of bench instances that ran one schedule
// together (bench -shard i/N -start-at T): counts are added, histograms
// merged (not averaged), timelines and sell-out curves aligned on the
// earliest start. names label the inputs in the merged run's metadata.
func Merge(rs []*Result, names []string) (*Result, error) {
	if len(rs) == 0 {
		return nil, errors.New("merge: no results")
	}
	start := rs[0].Start
	for _, r := range rs {
		if r.Start.Before(start) {
			start = r.Start
		}
	}
	first := rs[0]
	out := &Result{Scenario: first.Scenario, URL: first.URL, Start: start, Mode: first.Mode, GOMAXPROCS: first.GOMAXPROCS,
		LateBy: first.LateBy, SaleID: first.SaleID, Meta: first.Meta}
	out.Meta.Shard, out.Meta.Shards = "", names
	for i, r := range rs {
		if r.Scenario != first.Scenario || r.URL != first.URL || r.SaleID != first.SaleID {
			return nil, fmt.Errorf("merge: %s ran %s against %s (sale %d), %s ran %s against %s (sale %d)",
				inputName(names, 0), first.Scenario, first.URL, first.SaleID, inputName(names, i), r.Scenario, r.URL, r.SaleID)
		}
		if err := out.add(r, r.Start.Sub(start)); err != nil {
			return nil, fmt.Errorf("merge: %s: %w", inputName(names, i), err)
		}
	}
	out.Finish()
	return out, nil
}

func inputName(names []string, i int) string {
	if i < len(names) {
		return names[i]
	}
	return fmt.Sprintf("result %d", i+1)
}

// add adds r, which started off after the merged run's start.
func (m *Result) add(r *Result, off time.Duration) error {
	m.Elapsed = math.Max(m.Elapsed, off.Seconds()+r.Elapsed)
	m.Conns += r.Conns
	m.Workers += r.Workers
	m.Users = max(m.Users, r.Users)
	m.Late += r.Late
	m.LateWaited += r.LateWaited
	m.Unsent += r.Unsent
	m.Retries += r.Retries
	m.AcceptedN += r.AcceptedN
	m.MaxLateMs = math.Max(m.MaxLateMs, r.MaxLateMs)
	m.Status, m.Codes, m.Errors = addCounts(m.Status, r.Status), addCounts(m.Codes, r.Codes), addCounts(m.Errors, r.Errors)
	var err error
	if m.Hist, err = mergeHist(m.Hist, r.Hist); err != nil {
		return err
	}
	if m.HistUncorrected, err = mergeHist(m.HistUncorrected, r.HistUncorrected); err != nil {
		return err
	}
	if err := m.addOutcomes(r.Outcomes); err != nil {
		return err
	}
	if err := m.addTimeline(r.Timeline, int(math.Round(off.Seconds()))); err != nil {
		return err
	}
	m.addSales(r.Sales, off)
	if len(m.Stock) == 0 {
		for _, s := range r.Stock {
			m.Stock = append(m.Stock, StockSample{T: s.T + off.Seconds(), Left: s.Left})
		}
	}
	seen := map[sharding.OrderID]bool{}
	for _, a := range m.acceptedOrders {
		seen[a.Order] = true
	}
	for _, a := range r.acceptedOrders {
		if !seen[a.Order] {
			seen[a.Order] = true
			m.acceptedOrders = append(m.acceptedOrders, a)
		}
	}
	for _, id := range r.Items {
		if !slices.Contains(m.Items, id) {
			m.Items = append(m.Items, id)
		}
	}
	return nil
}

func addCounts(into, from []Count) []Count {
	for _, c := range from {
		i := slices.IndexFunc(into, func(x Count) bool { return x.Kind == c.Kind && x.What == c.What })
		if i < 0 {
			into = append(into, c)
		} else {
			into[i].Count += c.Count
		}
	}
	return into
}

func (m *Result) addOutcomes(from []Outcome) error {
	for _, o := range from {
		i := slices.IndexFunc(m.Outcomes, func(x Outcome) bool { return x.Name == o.Name })
		if i < 0 {
			m.Outcomes = append(m.Outcomes, Outcome{Name: o.Name})
			i = len(m.Outcomes) - 1
		}
		mo := &m.Outcomes[i]
		mo.Count += o.Count
		var err error
		if mo.Hist, err = mergeHist(mo.Hist, o.Hist); err != nil {
			return err
		}
		if mo.HistUncorrected, err = mergeHist(mo.HistUncorrected, o.HistUncorrected); err != nil {
			return err
		}
	}
	order := map[string]int{"202": 0, "409": 1, "410": 2, "429": 3, "503": 4, "other": 5, "pay": 6, "cancel": 7, "get-order": 8}
	slices.SortStableFunc(m.Outcomes, func(a, b Outcome) int { return order[a.Name] - order[b.Name] })
	return nil
}

func (m *Result) addTimeline(from []Second, off int) error {
	for _, s := range from {
		t := s.T + off
		for len(m.Timeline) <= t {
			m.Timeline = append(m.Timeline, Second{T: len(m.Timeline)})
		}
		ms := &m.Timeline[t]
		ms.Offered += s.Offered
		ms.Sent += s.Sent
		ms.Done += s.Done
		ms.OK += s.OK
		ms.Client += s.Client
		ms.Limited += s.Limited
		ms.Server += s.Server
		ms.Failed += s.Failed
		for k, v := range s.Out {
			if ms.Out == nil {
				ms.Out = map[string]int64{}
			}
			ms.Out[k] += v
		}
		var err error
		if ms.Hist, err = mergeHist(ms.Hist, s.Hist); err != nil {
			return err
		}
	}
	return nil
}

func (m *Result) addSales(from []ItemSale, off time.Duration) {
	ticks := int(off / (TickMs * time.Millisecond))
	for _, it := range from {
		i := slices.IndexFunc(m.Sales, func(x ItemSale) bool { return x.ID == it.ID })
		if i < 0 {
			m.Sales = append(m.Sales, ItemSale{ID: it.ID})
			i = len(m.Sales) - 1
		}
		ms := &m.Sales[i]
		ms.Quantity = max(ms.Quantity, it.Quantity)
		if it.Accepted > 0 {
			f, l := it.FirstS+off.Seconds(), it.LastS+off.Seconds()
			if ms.Accepted == 0 || f < ms.FirstS {
				ms.FirstS = f
			}
			ms.LastS = math.Max(ms.LastS, l)
		}
		ms.Accepted += it.Accepted
		for t, n := range it.Ticks {
			for len(ms.Ticks) <= t+ticks {
				ms.Ticks = append(ms.Ticks, 0)
			}
			ms.Ticks[t+ticks] += n
		}
	}
}
