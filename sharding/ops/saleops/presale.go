package saleops

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"flashsale/sharding/ops/tool"
)

// MaxUserID is the largest user id a presale list takes: the gateway reads a
// token's user id as a positive int64.
const MaxUserID = 1<<63 - 1

// ParsePresaleUsers reads a presale list: one decimal user id per line (in
// 1..MaxUserID; leading zeros are dropped), blank lines and everything from
// a '#' to the end of its line ignored. A malformed line fails the whole
// list, naming the line (name is what the error calls the input).
func ParsePresaleUsers(r io.Reader, name string) ([]uint64, error) {
	sc := bufio.NewScanner(r)
	var users []uint64
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		u, err := strconv.ParseUint(line, 10, 64)
		switch {
		case err != nil && errors.Is(err, strconv.ErrRange), err == nil && u > MaxUserID:
			return nil, fmt.Errorf("%s line %d: user id %s is over %d (2^63-1), the largest a token carries", name, n, line, uint64(MaxUserID))
		case err != nil:
			return nil, fmt.Errorf("%s line %d: %q is not a user id (want one decimal number per line; # starts a comment)", name, n, line)
		case u == 0:
			return nil, fmt.Errorf("%s line %d: user id 0: user ids start at 1", name, n)
		}
		users = append(users, u)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("%s holds no user id", name)
	}
	return users, nil
}

// ReadPresaleFile reads the presale list at path ("-": standard input).
func ReadPresaleFile(path string) ([]uint64, error) {
	if path == "-" {
		return ParsePresaleUsers(tool.Stdin, "standard input")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the presale list: %w", err)
	}
	defer f.Close()
	return ParsePresaleUsers(f, path)
}

// PresaleLoaded is the report of `sale presale load`.
type PresaleLoaded struct {
	Sale  int64 `json:"sale"`
	Read  int   `json:"read"`  // user ids in the file
	Added int64 `json:"added"` // of them new to the list
	Size  int64 `json:"size"`  // user ids in the list now
}

// Text renders the report.
func (r *PresaleLoaded) Text(w io.Writer) error {
	_, err := fmt.Fprintf(w, "presale list of sale %d: %d user ids read, %d added (the others were listed already), %d in the list now\n",
		r.Sale, r.Read, r.Added, r.Size)
	return err
}

// LoadPresale adds users to the presale list of sale id (see
// stock.Store.AddPresaleUsers), which expires with the sale's other access
// keys. A sale whose presale takes no list is refused; a list may grow
// during the presale too.
func LoadPresale(ctx context.Context, t *tool.Tool, id int64, users []uint64) (*PresaleLoaded, error) {
	s, err := t.LoadSale(ctx, id)
	if err != nil {
		return nil, err
	}
	if s.Presale == nil || !s.Presale.List {
		return nil, fmt.Errorf("sale %d has no presale list (its sale file sets no presale.list: true): nobody would read it", id)
	}
	added, size, err := t.Store.AddPresaleUsers(ctx, id, users, tool.AccessExpiry(s))
	if err != nil {
		return nil, err
	}
	return &PresaleLoaded{Sale: id, Read: len(users), Added: added, Size: size}, nil
}
