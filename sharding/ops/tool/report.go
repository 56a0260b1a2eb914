package tool

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Placement says where one shard's keys live.
type Placement struct {
	Shard  int    `json:"shard"`
	Tag    string `json:"tag"`
	Slot   uint16 `json:"slot"`
	Master string `json:"master"`
}

// Report is what every subcommand returns: it renders as text for people.
type Report interface {
	Text(w io.Writer) error
}

// Write renders r as indented JSON when asJSON is set, else as text.
func Write(w io.Writer, r Report, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return r.Text(w)
}

// Table writes aligned columns; cells are joined by tabs.
type Table struct{ tw *tabwriter.Writer }

// NewTable starts a table on w with a header row.
func NewTable(w io.Writer, header ...string) *Table {
	t := &Table{tw: tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)}
	t.Row(header...)
	return t
}

// Row adds a row of cells.
func (t *Table) Row(cells ...string) {
	fmt.Fprintln(t.tw, strings.Join(cells, "\t")+"\t")
}

// Flush writes the table out.
func (t *Table) Flush() error { return t.tw.Flush() }

// Itoa is n in decimal.
func Itoa(n int64) string { return fmt.Sprintf("%d", n) }

// Sum is the sum of v.
func Sum(v []int64) int64 {
	var s int64
	for _, x := range v {
		s += x
	}
	return s
}

// MaxRows is how many findings of one kind the text shows; --json shows all.
const MaxRows = 10

// MoreRows says, per kind, how many rows beyond MaxRows the text left out.
func MoreRows(w io.Writer, shown map[string]int) {
	for k, n := range shown {
		if n > MaxRows {
			fmt.Fprintf(w, "  ... and %d more %s (all of them with --json)\n", n-MaxRows, k)
		}
	}
}
