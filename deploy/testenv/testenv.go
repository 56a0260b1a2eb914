// Package testenv connects Go integration tests to the local stack started by
// `make up` (deploy/stack/stack.sh up): a six-node Redis Cluster, PostgreSQL and a
// Kafka-protocol broker, all on 127.0.0.1.
//
// Addresses come from the environment variables that `up` writes to .run/env
// (FLASHSALE_REDIS, DATABASE_URL, KAFKA_BROKERS). A variable that is not set is
// read from <repo>/.run/env when that file exists, and otherwise falls back to the
// stack's default ports. Tests call Require (or one of the New helpers, which call
// it) and are skipped when the stack is not running, unless
// FLASHSALE_REQUIRE_STACK=1 is set, in which case they fail; a test that
// lacks another real part (a tool, the real broker) calls Missing, which
// keeps the same rule.
package testenv

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	shared "flashsale/sharding/config"
)

// Default addresses of the local stack.
const (
	DefaultRedis       = shared.DefaultRedis
	DefaultDatabaseURL = shared.DefaultDatabaseURL
	DefaultKafka       = shared.DefaultKafka
)

// checkTimeout bounds each reachability check done by Require.
const checkTimeout = 2 * time.Second

// RedisAddrs returns the Redis Cluster seed addresses (FLASHSALE_REDIS, comma separated).
func RedisAddrs() []string { return splitList(lookup("FLASHSALE_REDIS", DefaultRedis)) }

// DatabaseURL returns the PostgreSQL connection URL (DATABASE_URL).
func DatabaseURL() string { return lookup("DATABASE_URL", DefaultDatabaseURL) }

// KafkaBrokers returns the Kafka seed brokers (KAFKA_BROKERS, comma separated).
func KafkaBrokers() []string { return splitList(lookup("KAFKA_BROKERS", DefaultKafka)) }

// Require checks that each named service ("redis", "postgres", "kafka"; all three
// when none is named) answers within about two seconds. When one does not, the
// test is skipped, or fails if FLASHSALE_REQUIRE_STACK=1.
func Require(t testing.TB, what ...string) {
	t.Helper()
	if len(what) == 0 {
		what = []string{"redis", "postgres", "kafka"}
	}
	for _, w := range what {
		ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
		var err error
		switch w {
		case "redis":
			err = checkRedis(ctx)
		case "postgres":
			err = checkPostgres(ctx)
		case "kafka":
			err = checkKafka(ctx)
		default:
			err = fmt.Errorf("unknown service %q (want redis, postgres or kafka)", w)
		}
		cancel()
		if err == nil {
			continue
		}
		Missing(t, fmt.Sprintf("testenv: %s is not available: %v; start the local stack with `make up`", w, err))
	}
}

// Missing stops a test that lacks a real part it needs: a service, a tool
// (a browser, iptables), the real broker where the stack runs its stand-in.
// It is the one rule for all of them: under FLASHSALE_REQUIRE_STACK=1 (make
// test, CI), where the suite must test everything, it fails the test;
// otherwise it skips it. why says what is missing and how to get it.
func Missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("FLASHSALE_REQUIRE_STACK") == "1" {
		t.Fatal(why)
	} else {
		t.Skip(why + " (set FLASHSALE_REQUIRE_STACK=1 to fail instead of skipping)")
	}
}

// NewRedis returns a cluster client over RedisAddrs, closed when the test ends.
func NewRedis(t testing.TB) rueidis.Client {
	t.Helper()
	Require(t, "redis")
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: RedisAddrs(), ShuffleInit: true})
	if err != nil {
		t.Fatalf("testenv: redis client: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// NewRedisClient returns a cluster client over RedisAddrs for code that
// runs apart from a test's goroutine (a fault injected in the background);
// the caller closes it.
func NewRedisClient() (rueidis.Client, error) {
	return NewRedisClientOn(RedisAddrs())
}

// NewRedisClientOn is NewRedisClient for the cluster at addrs (the lab's).
func NewRedisClientOn(addrs []string) (rueidis.Client, error) {
	return rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, ShuffleInit: true})
}

// NewPool returns a pgx pool on DatabaseURL, closed when the test ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	Require(t, "postgres")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := pgxpool.New(ctx, DatabaseURL())
	if err != nil {
		t.Fatalf("testenv: pgx pool: %v", err)
	}
	if err := p.Ping(ctx); err != nil {
		p.Close()
		t.Fatalf("testenv: pgx ping: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// NewKafkaAdmin returns a kadm client on KafkaBrokers, closed when the test ends.
func NewKafkaAdmin(t testing.TB) *kadm.Client {
	t.Helper()
	Require(t, "kafka")
	cl, err := kgo.NewClient(kgo.SeedBrokers(KafkaBrokers()...))
	if err != nil {
		t.Fatalf("testenv: kafka client: %v", err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

var unsafeTopic = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// NewTopic creates a topic with 8 partitions whose name starts with prefix and
// is unique to this run, and deletes it when the test ends.
func NewTopic(t testing.TB, prefix string) string {
	t.Helper()
	adm := NewKafkaAdmin(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := unsafeTopic.ReplaceAllString(prefix, "_") + "-" + hex.EncodeToString(b[:])
	// A broker started seconds ago, under the whole suite's parallel load,
	// took over 15 s once (CI, 2026-12-03) to host a new topic's leaders.
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, 8, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("testenv: create topic %s: %v", name, err)
	}
	// Kafka announces a new topic's leaders before the leader hosts the partitions;
	// until it does, ListOffsets fails and clients back off for seconds. Wait for it.
	for {
		err := topicReady(ctx, adm, name)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("testenv: topic %s not ready: %v", name, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if _, err := adm.DeleteTopics(ctx, name); err != nil {
			t.Logf("testenv: delete topic %s: %v", name, err)
		}
	})
	return name
}

// topicReady reports whether every partition of topic has a leader that answers
// ListOffsets.
func topicReady(ctx context.Context, adm *kadm.Client, topic string) error {
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return err
	}
	td := tds[topic]
	if td.Err != nil {
		return td.Err
	}
	for _, pd := range td.Partitions {
		if pd.Err != nil || pd.Leader < 0 {
			return fmt.Errorf("partition %d: no leader (%v)", pd.Partition, pd.Err)
		}
	}
	offs, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	if err := offs.Error(); err != nil {
		return err
	}
	if n := len(offs[topic]); n != len(td.Partitions) {
		return fmt.Errorf("ListOffsets answered for %d of %d partitions", n, len(td.Partitions))
	}
	return nil
}

// checkRedis asks every node for CLUSTER INFO over raw RESP and wants cluster_state:ok.
func checkRedis(ctx context.Context) error {
	deadline, _ := ctx.Deadline()
	for _, addr := range RedisAddrs() {
		if err := func() error {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return err
			}
			defer c.Close()
			_ = c.SetDeadline(deadline)
			if _, err := c.Write([]byte("*2\r\n$7\r\nCLUSTER\r\n$4\r\nINFO\r\n")); err != nil {
				return err
			}
			r := bufio.NewReader(c)
			head, err := r.ReadString('\n')
			if err != nil {
				return err
			}
			if !strings.HasPrefix(head, "$") && !strings.HasPrefix(head, "=") {
				return fmt.Errorf("CLUSTER INFO: %s", strings.TrimSpace(head))
			}
			line, err := r.ReadString('\n')
			for err == nil && !strings.HasPrefix(line, "cluster_state:") {
				line, err = r.ReadString('\n')
			}
			if err != nil {
				return fmt.Errorf("CLUSTER INFO: no cluster_state: %w", err)
			}
			if st := strings.TrimSpace(line); st != "cluster_state:ok" {
				return fmt.Errorf("%s", st)
			}
			return nil
		}(); err != nil {
			return fmt.Errorf("%s: %w", addr, err)
		}
	}
	return nil
}

func checkPostgres(ctx context.Context) error {
	c, err := pgx.Connect(ctx, DatabaseURL())
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	return c.Ping(ctx)
}

func checkKafka(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(KafkaBrokers()...))
	if err != nil {
		return err
	}
	defer cl.Close()
	_, err = kadm.NewClient(cl).BrokerMetadata(ctx)
	return err
}

// lookup returns the environment variable, else its value in <repo>/.run/env,
// else def.
func lookup(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	if v, ok := runEnv()[key]; ok && v != "" {
		return v
	}
	return def
}

// runEnv parses the `export KEY=VALUE` lines of <repo>/.run/env (values may be
// single-quoted). It returns nil when the file does not exist.
func runEnv() map[string]string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", ".run", "env"))
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "export "), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			v = strings.ReplaceAll(v[1:len(v)-1], `'\''`, `'`)
		}
		m[k] = v
	}
	return m
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
