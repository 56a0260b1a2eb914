package journal

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ackedPrefix reads results in the order franz-go completed them, which is
// not the order the records were given (issue 55, defect 1).
func TestAckedPrefix(t *testing.T) {
	recs := []*kgo.Record{{Value: []byte("0")}, {Value: []byte("1")}, {Value: []byte("2")}, {Value: []byte("3")}}
	boom := errors.New("NOT_LEADER_FOR_PARTITION")
	res := func(pairs ...any) kgo.ProduceResults {
		var out kgo.ProduceResults
		for i := 0; i < len(pairs); i += 2 {
			var err error
			if pairs[i+1] != nil {
				err = pairs[i+1].(error)
			}
			out = append(out, kgo.ProduceResult{Record: pairs[i].(*kgo.Record), Err: err})
		}
		return out
	}
	stranger := &kgo.Record{}
	for _, c := range []struct {
		name string
		res  kgo.ProduceResults
		want int
		err  bool
	}{
		{"all, in order", res(recs[0], nil, recs[1], nil, recs[2], nil, recs[3], nil), 4, false},
		{"all, out of order", res(recs[3], nil, recs[1], nil, recs[0], nil, recs[2], nil), 4, false},
		{"the first failed, completed last", res(recs[1], nil, recs[2], nil, recs[3], nil, recs[0], boom), 0, true},
		{"the third failed, completed first", res(recs[2], boom, recs[0], nil, recs[3], nil, recs[1], nil), 2, true},
		{"a result missing", res(recs[0], nil, recs[2], nil, recs[3], nil), 1, false},
		{"a stranger's success", res(stranger, nil, recs[0], nil), 1, false},
		{"none", nil, 0, false},
	} {
		n, err := ackedPrefix(recs, c.res)
		if n != c.want || (err != nil) != c.err {
			t.Errorf("%s: %d, %v; want %d (error %v)", c.name, n, err, c.want, c.err)
		}
	}
}
