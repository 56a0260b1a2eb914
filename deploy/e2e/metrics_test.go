package e2e_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// samples are the samples of a Prometheus text exposition: each line's name
// with its labels, and its value.
type samples []sample

type sample struct {
	series string // name{labels}
	value  float64
}

// scrape reads the /metrics of an admin address.
func scrape(t *testing.T, admin string) samples {
	t.Helper()
	code, body, err := fasthttp.GetTimeout(nil, "http://"+admin+"/metrics", 2*time.Second)
	if err != nil || code != 200 {
		t.Fatalf("GET %s/metrics: %d %v", admin, code, err)
	}
	var out samples
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			t.Fatalf("metrics line %q does not parse", line)
		}
		out = append(out, sample{line[:i], v})
	}
	return out
}

// match reports whether x is a series of name holding the label (k="v").
func (x sample) match(name, label string) bool {
	rest, ok := strings.CutPrefix(x.series, name)
	return ok && (rest == "" || rest[0] == '{') && strings.Contains(rest, label)
}

func (m samples) sum(name, label string) float64 {
	var v float64
	for _, x := range m {
		if x.match(name, label) {
			v += x.value
		}
	}
	return v
}

func (m samples) max(name, label string) float64 {
	var v float64
	for _, x := range m {
		if x.match(name, label) {
			v = max(v, x.value)
		}
	}
	return v
}
