package journal

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// GroupLag returns the records consumer group (every writer) has yet to
// commit on topic: the end offsets minus the committed ones, summed over the
// partitions, a partition with no commit counting all its records. The
// writer commits offsets only after the batch's PostgreSQL commit, so 0
// means every record produced before the call is persisted: the moment the
// ghost sweep and flashctl reconcile wait for before they call a reservation
// that left the journal without reaching PostgreSQL lost.
func GroupLag(ctx context.Context, cl *kgo.Client, group, topic string) (int64, error) {
	adm := kadm.NewClient(cl)
	lags, err := adm.Lag(ctx, group)
	if err != nil {
		return 0, fmt.Errorf("reading the group's lag: %w", err)
	}
	g, ok := lags[group]
	if !ok {
		return 0, fmt.Errorf("reading the group's lag: group %s not described", group)
	}
	if err := g.Error(); err != nil {
		return 0, fmt.Errorf("reading the group's lag: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("reading end offsets: %w", err)
	}
	var total int64
	var ferr error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			ferr = o.Err
			return
		}
		committed := int64(0)
		if l, ok := g.Lag.Lookup(topic, o.Partition); ok && l.Commit.At >= 0 {
			committed = l.Commit.At
		}
		total += max(o.Offset-committed, 0)
	})
	if ferr != nil {
		return 0, fmt.Errorf("reading end offsets: %w", ferr)
	}
	return total, nil
}
