package toolbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/redis/rueidis"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	shared "flashsale/sharding/config"
	"flashsale/sharding/journal"
	"flashsale/sharding/ops/tool"
)

// Reach is one toolbox check: whether each store answered with the ops
// settings, and what it said.
type Reach struct {
	At       time.Time `json:"at"`
	OK       bool      `json:"ok"`
	Redis    string    `json:"redis"`
	Postgres string    `json:"postgres"`
	Kafka    string    `json:"kafka"`
}

// Text renders the check on one line.
func (r *Reach) Text(w io.Writer) error {
	word := "ok"
	if !r.OK {
		word = "FAILING"
	}
	_, err := fmt.Fprintf(w, "%s toolbox %s: redis %s; postgresql %s; kafka %s\n",
		r.At.Format(time.RFC3339), word, r.Redis, r.Postgres, r.Kafka)
	return err
}

// Options are what a check reads in Kafka, the writers' group lag on the
// orders topic (what reconcile --repair needs), and how long it may take.
type Options struct {
	Group, Topic string
	Timeout      time.Duration
}

// Check dials every store afresh with cfg (a password file rotated since
// the last check is read again) and reports what answered.
func Check(ctx context.Context, cfg shared.Common, o Options) *Reach {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	r := &Reach{At: time.Now().UTC(), OK: true}
	fail := func(err error) string { r.OK = false; return "FAILED: " + err.Error() }
	if s, err := reachRedis(ctx, cfg); err != nil {
		r.Redis = fail(err)
	} else {
		r.Redis = s
	}
	if db, err := tool.DialPostgres(ctx, cfg.Postgres, true); err != nil {
		r.Postgres = fail(err)
	} else {
		db.Close()
		r.Postgres = "ok"
	}
	if s, err := reachKafka(ctx, cfg, o); err != nil {
		r.Kafka = fail(err)
	} else {
		r.Kafka = s
	}
	return r
}

// reachRedis pings every node of the cluster (the masters and the replicas
// the client knows): the ops commands write on every master.
func reachRedis(ctx context.Context, cfg shared.Common) (string, error) {
	c, err := tool.DialRedis(cfg.Redis)
	if err != nil {
		return "", err
	}
	defer c.Close()
	nodes := c.Nodes()
	addrs := make([]string, 0, len(nodes))
	for a := range nodes {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	var bad []string
	for _, a := range addrs {
		if err := nodes[a].Do(ctx, nodes[a].B().Ping().Build()).Error(); err != nil && !rueidis.IsRedisNil(err) {
			bad = append(bad, a+": "+err.Error())
		}
	}
	if len(bad) > 0 {
		return "", fmt.Errorf("%d of %d nodes do not answer (%s)", len(bad), len(addrs), strings.Join(bad, "; "))
	}
	return fmt.Sprintf("ok (%d nodes answer)", len(addrs)), nil
}

// reachKafka reads the writers' lag, with the same calls reconcile --repair
// makes before it releases an orphan.
func reachKafka(ctx context.Context, cfg shared.Common, o Options) (string, error) {
	cl, err := kgo.NewClient(cfg.Kafka.Opts()...)
	if err != nil {
		return "", fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	lag, err := journal.GroupLag(ctx, cl, o.Group, o.Topic)
	if errors.Is(err, kerr.GroupIDNotFound) {
		// Reached and authorized (a refused describe says
		// GROUP_AUTHORIZATION_FAILED): no writer has committed yet.
		return fmt.Sprintf("ok (group %s has not committed an offset yet)", o.Group), nil
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("ok (group %s has %d records of %s to persist)", o.Group, lag, o.Topic), nil
}
