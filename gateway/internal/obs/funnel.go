package obs

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"flashsale/sharding/api"
)

// Funnel is one sale's funnel counters (api.Funnel*): page loads, ticket
// answers, admissions and purchase answers, with the sale label. Get it with
// Metrics.Funnel; counting is an atomic add that allocates nothing.
type Funnel struct {
	pageLoads, admissions prometheus.Counter
	tickets, purchases    [api.NumFunnelAnswers]prometheus.Counter // nil for an answer the route does not give
}

// PageLoad counts the sale page served.
func (f *Funnel) PageLoad() { f.pageLoads.Inc() }

// Admitted counts a user the waiting room or raffle admitted.
func (f *Funnel) Admitted() { f.admissions.Inc() }

// Ticket counts a ticket answer.
func (f *Funnel) Ticket(a api.FunnelAnswer) { count(&f.tickets, a) }

// Purchase counts a purchase answer.
func (f *Funnel) Purchase(a api.FunnelAnswer) { count(&f.purchases, a) }

func count(row *[api.NumFunnelAnswers]prometheus.Counter, a api.FunnelAnswer) {
	if a >= api.NumFunnelAnswers || row[a] == nil {
		a = api.AnswerOther
	}
	row[a].Inc()
}

// funnels are the funnels of the sales seen, behind a copy-on-write slice:
// the request path reads it with one atomic load and a scan of the few
// sales a gateway serves at once (faster than a map for that many; the
// sold-out path pays it on every request).
type funnels struct {
	mu                                    sync.Mutex // serialises writers of m
	m                                     atomic.Pointer[[]saleFunnel]
	pages, tickets, admissions, purchases *prometheus.CounterVec
}

type saleFunnel struct {
	sale int64
	f    *Funnel
}

func (fs *funnels) find(sale int64) *Funnel {
	for _, sf := range *fs.m.Load() {
		if sf.sale == sale {
			return sf.f
		}
	}
	return nil
}

func newFunnels(reg *prometheus.Registry) *funnels {
	f := &funnels{
		pages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: api.FunnelPageLoads,
			Help: "Sale pages served (200 or 304) for a sale this gateway knows; a CDN's are not counted."}, []string{"sale"}),
		tickets: prometheus.NewCounterVec(prometheus.CounterOpts{Name: api.FunnelTickets,
			Help: "Answers of the ticket endpoint, by answer (issued, queued, ...); a queued user's every poll counts."}, []string{"sale", "answer"}),
		admissions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: api.FunnelAdmissions,
			Help: "Users the waiting room or raffle admitted."}, []string{"sale"}),
		purchases: prometheus.NewCounterVec(prometheus.CounterOpts{Name: api.FunnelPurchases,
			Help: "Purchase answers, by answer (accepted is the 202s)."}, []string{"sale", "answer"}),
	}
	f.m.Store(&[]saleFunnel{})
	reg.MustRegister(f.pages, f.tickets, f.admissions, f.purchases)
	return f
}

// Funnel returns sale's funnel, making it (and its series, all at 0) the
// first time. Call it for a sale the catalog holds only: every sale id asked
// for stays exported until ForgetSale.
func (m *Metrics) Funnel(sale int64) *Funnel {
	if f := m.funnel.find(sale); f != nil {
		return f
	}
	return m.funnel.add(sale)
}

func (fs *funnels) add(sale int64) *Funnel {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f := fs.find(sale); f != nil {
		return f
	}
	id := strconv.FormatInt(sale, 10)
	f := &Funnel{pageLoads: fs.pages.WithLabelValues(id), admissions: fs.admissions.WithLabelValues(id)}
	for _, a := range api.TicketAnswers {
		f.tickets[a] = fs.tickets.WithLabelValues(id, a.String())
	}
	for _, a := range api.PurchaseAnswers {
		f.purchases[a] = fs.purchases.WithLabelValues(id, a.String())
	}
	next := append(slices.Clone(*fs.m.Load()), saleFunnel{sale, f})
	fs.m.Store(&next)
	return f
}

// forget drops sale's funnel and its series.
func (fs *funnels) forget(sale int64) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.find(sale) == nil {
		return
	}
	next := slices.DeleteFunc(slices.Clone(*fs.m.Load()), func(sf saleFunnel) bool { return sf.sale == sale })
	fs.m.Store(&next)
	id := prometheus.Labels{"sale": strconv.FormatInt(sale, 10)}
	for _, v := range []*prometheus.CounterVec{fs.pages, fs.tickets, fs.admissions, fs.purchases} {
		v.DeletePartialMatch(id)
	}
}
