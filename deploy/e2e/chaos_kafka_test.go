package e2e_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"flashsale/deploy/testenv"
)

// chaosPartitions is the orders topic's partition count in a chaos run:
// the sale's items (key = item id) land on partitions of their own, so a
// relay round spans several partitions.
const chaosPartitions = 6

// chaosKafka is a chaos run's Kafka: the stack's broker, or, when the plan
// holds a fault only a cluster of several brokers can have (a partition
// leader failing over), an in-process franz-go kfake cluster of three
// brokers, whose requests the run can fail or hold.
type chaosKafka struct {
	brokers []string
	kf      *kfake.Cluster // nil: the stack's broker

	mu      sync.Mutex
	parts   int                          // the orders topic's partitions now
	down    *kfake.FaultHandle           // the cluster refusing, nil when up
	leaders map[int32]*kfake.FaultHandle // partitions failing over
}

// needsCluster reports whether the plan needs several brokers.
func needsCluster(plan []*fault) bool {
	for _, f := range plan {
		if f.kind == "leader-failover" {
			return true
		}
	}
	return false
}

// newChaosKafka starts the run's Kafka and creates its topics.
func newChaosKafka(t *testing.T, cluster bool, topic string) *chaosKafka {
	t.Helper()
	k := &chaosKafka{brokers: testenv.KafkaBrokers(), leaders: map[int32]*kfake.FaultHandle{}, parts: chaosPartitions}
	if cluster {
		kf, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(chaosPartitions))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(kf.Close)
		k.kf, k.brokers = kf, kf.ListenAddrs()
	}
	adm := k.admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	for _, name := range []string{topic, topic + ".dlq"} {
		resp, err := adm.CreateTopic(ctx, chaosPartitions, 1, nil, name)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatalf("creating topic %s: %v", name, err)
		}
	}
	return k
}

// admin returns an admin client of the run's Kafka.
func (k *chaosKafka) admin(t *testing.T) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// name says which Kafka the run has.
func (k *chaosKafka) name() string {
	if k.kf != nil {
		return "in-process kfake, 3 brokers"
	}
	return "the stack's broker"
}

// stop stops the stack's broker, or makes the kfake cluster refuse every
// produce and fetch (NOT_LEADER_FOR_PARTITION: the leaders are gone),
// which clients retry. Holding the requests instead would not do: kfake
// applies a held produce once it lets it go, even when the producer died
// meanwhile, and a stopped broker never writes what it did not take.
func (k *chaosKafka) stop(t *testing.T) error {
	if k.kf == nil {
		return testenv.Stack(t, "broker-stop")
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.down == nil {
		k.down = k.kf.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce, kmsg.Fetch}, Err: kerr.NotLeaderForPartition, Count: -1})
	}
	return nil
}

// start ends stop.
func (k *chaosKafka) start(t *testing.T) error {
	if k.kf == nil {
		return testenv.Stack(t, "broker-start")
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.down != nil {
		k.down.Remove()
		k.down = nil
	}
	return nil
}

// failLeader makes the leader of the topic's partition p answer every
// produce NOT_LEADER_FOR_PARTITION, as a leader failing over does, until
// moveLeader.
func (k *chaosKafka) failLeader(topic string, p int32) error {
	if k.kf == nil {
		return fmt.Errorf("no leader failover on the stack's single broker")
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.leaders[p] == nil {
		k.leaders[p] = k.kf.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Partitions: []int32{p},
			Err: kerr.NotLeaderForPartition, Count: -1})
	}
	return nil
}

// moveLeader ends failLeader: the partition's leadership moves to the next
// broker and its produces are answered again.
func (k *chaosKafka) moveLeader(topic string, p int32) error {
	if k.kf == nil {
		return nil
	}
	k.mu.Lock()
	h := k.leaders[p]
	delete(k.leaders, p)
	k.mu.Unlock()
	err := k.kf.MoveTopicPartition(topic, p, (k.kf.LeaderFor(topic, p)+1)%3)
	if h != nil {
		h.Remove()
	}
	return err
}

// healAll ends every stall and failover.
func (k *chaosKafka) healAll(t *testing.T, topic string) {
	_ = k.start(t)
	k.mu.Lock()
	var ps []int32
	for p := range k.leaders {
		ps = append(ps, p)
	}
	k.mu.Unlock()
	for _, p := range ps {
		_ = k.moveLeader(topic, p)
	}
}

// partitionOf returns the partition of a topic of n the relay's producer
// sends item's records to (key = item id, franz-go's default partitioner).
func partitionOf(item int64, n int) int32 {
	p := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	return int32(p.Partition(&kgo.Record{Key: []byte(strconv.FormatInt(item, 10))}, n))
}

// grow adds more partitions to topic and returns its count now.
func (k *chaosKafka) grow(t *testing.T, topic string, more int) (int, error) {
	adm := k.admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.CreatePartitions(ctx, more, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return 0, err
	}
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, err
	}
	k.mu.Lock()
	k.parts = len(td[topic].Partitions)
	k.mu.Unlock()
	return k.parts, nil
}

// partition returns the partition item's records go to now.
func (k *chaosKafka) partition(item int64) int32 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return partitionOf(item, k.parts)
}
