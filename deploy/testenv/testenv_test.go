package testenv

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestStack checks the real servers of the local stack: the Redis Cluster has three
// masters and three replicas, PostgreSQL answers a query, and the broker returns
// metadata and carries a record through a fresh topic.
func TestStack(t *testing.T) {
	Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("redis", func(t *testing.T) {
		rdb := NewRedis(t)
		nodes, err := rdb.Do(ctx, rdb.B().ClusterNodes().Build()).ToString()
		if err != nil {
			t.Fatalf("CLUSTER NODES: %v", err)
		}
		masters, replicas := 0, 0
		for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
			f := strings.Fields(line)
			if len(f) < 3 || strings.Contains(f[2], "fail") {
				continue
			}
			switch {
			case strings.Contains(f[2], "master"):
				masters++
			case strings.Contains(f[2], "slave"):
				replicas++
			}
		}
		if masters != 3 || replicas != 3 {
			t.Fatalf("CLUSTER NODES: %d masters, %d replicas, want 3 and 3:\n%s", masters, replicas, nodes)
		}
		key := "testenv:" + t.Name()
		if err := rdb.Do(ctx, rdb.B().Set().Key(key).Value("1").Ex(time.Minute).Build()).Error(); err != nil {
			t.Fatalf("SET: %v", err)
		}
	})

	t.Run("postgres", func(t *testing.T) {
		var one int
		if err := NewPool(t).QueryRow(ctx, "select 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("select 1: %d, %v", one, err)
		}
	})

	t.Run("kafka", func(t *testing.T) {
		adm := NewKafkaAdmin(t)
		md, err := adm.BrokerMetadata(ctx)
		if err != nil || len(md.Brokers) == 0 {
			t.Fatalf("broker metadata: %+v, %v", md, err)
		}
		t.Logf("brokers: %v, cluster %s, controller %d", md.Brokers, md.Cluster, md.Controller)

		topic := NewTopic(t, "testenv")
		tds, err := adm.ListTopics(ctx, topic)
		if err != nil || len(tds[topic].Partitions) != 8 {
			t.Fatalf("topic %s: %d partitions, %v; want 8", topic, len(tds[topic].Partitions), err)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(KafkaBrokers()...), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("hello")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("fetch: %v", err)
		}
		if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "hello" {
			t.Fatalf("consumed %d records, want the one produced", len(recs))
		}
	})
}

// FreePort hands out distinct ports below the ephemeral range, each one free.
func TestFreePort(t *testing.T) {
	seen := map[int]bool{}
	for range 100 {
		p := FreePort(t)
		if p < portLow || p >= portLow+portSpan || seen[p] {
			t.Fatalf("port %d: want a new one in %d-%d", p, portLow, portLow+portSpan-1)
		}
		seen[p] = true
		ln, err := net.Listen("tcp", FreeAddr(t))
		if err != nil {
			t.Fatalf("FreeAddr gave a port that cannot be bound: %v", err)
		}
		ln.Close()
	}
}
