package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"flashsale/sharding"
)

// File names in a result directory.
const (
	ResultFile   = "result.json"
	AcceptedFile = "accepted.tsv" // one distinct 202 a line: order id, tab, item id
	ReportFile   = "report.html"
)

// WriteFiles writes accepted.tsv, report.html and, last and atomically (a
// merge step may be waiting for it), result.json into dir (created), and
// returns the report's path.
func (r *Result) WriteFiles(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	if err := writeWith(filepath.Join(dir, AcceptedFile), r.writeAccepted); err != nil {
		return "", err
	}
	html := filepath.Join(dir, ReportFile)
	if err := writeWith(html, r.WriteHTML); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encoding result: %w", err)
	}
	tmp := filepath.Join(dir, "."+ResultFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("writing result: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, ResultFile)); err != nil {
		return "", fmt.Errorf("writing result: %w", err)
	}
	return html, nil
}

// writeWith creates path and writes it with write.
func writeWith(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	w := bufio.NewWriter(f)
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func (r *Result) writeAccepted(w io.Writer) error {
	for _, a := range r.acceptedOrders {
		if _, err := fmt.Fprintf(w, "%s\t%d\n", a.Order, a.ItemID); err != nil {
			return err
		}
	}
	return nil
}

// AcceptedOrders returns the distinct 202s of the run (read back by Load).
func (r *Result) AcceptedOrders() []AcceptedOrder { return r.acceptedOrders }

// Load reads a result directory written by WriteFiles (or a path to its
// result.json). Every histogram is checked: a malformed one is an error.
func Load(path string) (*Result, error) {
	dir := path
	if strings.HasSuffix(path, ".json") {
		dir = filepath.Dir(path)
	}
	b, err := os.ReadFile(filepath.Join(dir, ResultFile))
	if err != nil {
		return nil, fmt.Errorf("reading result: %w", err)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, ResultFile), err)
	}
	if err := r.checkHists(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, ResultFile), err)
	}
	acc, err := readAccepted(filepath.Join(dir, AcceptedFile))
	if err != nil {
		return nil, err
	}
	r.acceptedOrders = acc
	return &r, nil
}

// checkHists decodes every histogram once.
func (r *Result) checkHists() error {
	check := func(what, s string) error {
		if s == "" {
			return nil
		}
		if decodeHist(s) == nil {
			return fmt.Errorf("histogram %s is not an HdrHistogram encoding", what)
		}
		return nil
	}
	errs := []error{check("hist", r.Hist), check("histUncorrected", r.HistUncorrected)}
	for _, o := range r.Outcomes {
		errs = append(errs, check("of outcome "+o.Name, o.Hist), check("uncorrected of outcome "+o.Name, o.HistUncorrected))
	}
	for _, s := range r.Timeline {
		errs = append(errs, check("of second "+strconv.Itoa(s.T), s.Hist))
	}
	return errors.Join(errs...)
}

func readAccepted(path string) ([]AcceptedOrder, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading accepted orders: %w", err)
	}
	defer f.Close()
	var out []AcceptedOrder
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		id, item, ok := strings.Cut(sc.Text(), "\t")
		oid, okID := sharding.ParseOrderID([]byte(id))
		iid, err := strconv.ParseInt(item, 10, 64)
		if !ok || !okID || err != nil {
			return nil, fmt.Errorf("%s line %d: want <order id> TAB <item id>, got %q", path, n, sc.Text())
		}
		out = append(out, AcceptedOrder{Order: oid, ItemID: iid})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return out, nil
}
