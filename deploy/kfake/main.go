// Command kfake runs an embedded Kafka-protocol broker (franz-go's kfake) on
// 127.0.0.1 with its state persisted to a directory. The local stack
// (deploy/stack/stack.sh) uses it when Java or Maven is missing or when
// FLASHSALE_KAFKA=kfake is set; it is not a production broker.
package main

import (
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 9092, "TCP port to listen on (127.0.0.1 only)")
	dir := flag.String("dir", ".run/kfake/data", "directory that persists topics, offsets and groups")
	partitions := flag.Int("partitions", 8, "partitions of auto-created topics")
	flag.Parse()

	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.Ports(*port),
		kfake.DataDir(*dir),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(*partitions),
		kfake.ClusterID("flashsale-kfake"),
	)
	if err != nil {
		log.Fatalf("kfake: %v", err)
	}
	log.Printf("kfake listening on %v, data in %s", c.ListenAddrs(), *dir)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	s := <-sig
	log.Printf("kfake: %v received, shutting down", s)
	c.Close()
	log.Printf("kfake: stopped")
}
