package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"flashsale/sharding/ops/funnel"
	"flashsale/sharding/ops/tool"
)

// SaleReportOptions tune `sale report`.
type SaleReportOptions struct {
	LedgerOptions
	// Gateways are the gateways' admin addresses (or metrics URLs) whose
	// funnel counters are summed; Prometheus, when set, is read instead.
	Gateways   []string
	Prometheus string
	// HTTP reads the gateways and Prometheus (default: a client without
	// proxies' surprises, http.DefaultClient).
	HTTP *http.Client
}

// SaleReport is the closing report of a sale: the unit ledger (hashed),
// the timing and the gateways' funnel. Only Ledger is covered by Hash: the
// rest holds clock readings and counts of answers, which are not the books.
type SaleReport struct {
	Sale    int64     `json:"sale"`
	Name    string    `json:"name"`
	State   string    `json:"state"` // SCHEDULED, ACTIVE, PAUSED, ENDED (as status shows it)
	TakenAt time.Time `json:"takenAt"`
	// Settled: the sale ended, no order is PENDING, no unit is in flight
	// and the writers have nothing to persist. A settled sale's ledger no
	// longer changes: two reports of it have the same Hash.
	Settled  bool           `json:"settled"`
	Balanced bool           `json:"balanced"`
	Hash     string         `json:"hash"` // "sha256:" and the hex SHA-256 of Ledger's JSON
	Ledger   *Ledger        `json:"ledger"`
	Lag      WriterLag      `json:"writerLag"`
	Timing   *Timing        `json:"timing"`
	Funnel   *funnel.Funnel `json:"funnel,omitempty"` // nil without --gateways or --prometheus
}

// TakeReport takes the closing report of sale id (see the package doc,
// "The closing ledger"). It never repairs anything.
func TakeReport(ctx context.Context, t *tool.Tool, id int64, opt SaleReportOptions) (*SaleReport, error) {
	if err := t.NeedDB(); err != nil {
		return nil, err
	}
	sale, err := t.LoadSale(ctx, id)
	if err != nil {
		return nil, err
	}
	rep := &SaleReport{Sale: id, Name: sale.Name, TakenAt: time.Now().UTC()}
	rep.State = tool.SaleState(sale, rep.TakenAt)
	if rep.Ledger, rep.Lag, _, err = readLedger(ctx, t, sale, opt.LedgerOptions); err != nil {
		return nil, err
	}
	rep.Balanced = rep.Ledger.Balanced()
	if rep.Hash, err = LedgerHash(rep.Ledger); err != nil {
		return nil, err
	}
	tot := rep.Ledger.Total
	rep.Settled = rep.State == "ENDED" && tot.Pending == 0 && tot.InFlight.Units() == 0 && rep.Lag.Known && rep.Lag.Records == 0
	if rep.Timing, err = readTiming(ctx, t, id); err != nil {
		return nil, err
	}
	rep.Funnel = readFunnel(ctx, opt, id)
	if rep.Funnel != nil {
		rep.Funnel.Paid = tot.Paid
	}
	return rep, nil
}

// readFunnel reads the funnel from Prometheus, else from the gateways; nil
// when neither is given.
func readFunnel(ctx context.Context, opt SaleReportOptions, id int64) *funnel.Funnel {
	c := opt.HTTP
	if c == nil {
		c = http.DefaultClient
	}
	switch {
	case opt.Prometheus != "":
		return funnel.ReadPrometheus(ctx, c, id, opt.Prometheus)
	case len(opt.Gateways) > 0:
		return funnel.ReadGateways(ctx, c, id, opt.Gateways)
	}
	return nil
}

// LedgerHash is the content hash of l: "sha256:" and the hex SHA-256 of its
// JSON (struct fields in declaration order, map keys sorted, slices sorted
// by Ledger.finish), so that equal ledgers hash equal, byte for byte.
func LedgerHash(l *Ledger) (string, error) {
	b, err := json.Marshal(l)
	if err != nil {
		return "", fmt.Errorf("hashing the ledger: %w", err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
