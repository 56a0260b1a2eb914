// Command provision gives the local stack's Kafka broker the production users
// and ACLs of deploy/k8s/base/kafka-users.yaml, each user's SCRAM-SHA-512
// password read from SECRETS/kafka-<user>. deploy/stack/kafka.sh runs it after
// the broker starts, on the plain listener (whose ANONYMOUS principal is the
// local super user).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"flashsale/deploy/secure"
)

func main() {
	brokers := flag.String("kafka-brokers", "127.0.0.1:9092", "the broker's plain listener")
	users := flag.String("users", "deploy/k8s/base/kafka-users.yaml", "KafkaUser manifests")
	secrets := flag.String("secrets", ".run/secrets", "directory of the password files")
	flag.Parse()
	if err := run(*brokers, *users, *secrets); err != nil {
		fmt.Fprintln(os.Stderr, "provision:", err)
		os.Exit(1)
	}
}

func run(brokers, usersFile, secrets string) error {
	us, err := secure.ReadKafkaUsers(usersFile)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return secure.ApplyKafka(ctx, kadm.NewClient(cl), us, func(user string) (string, error) {
		b, err := os.ReadFile(filepath.Join(secrets, "kafka-"+user))
		return strings.TrimSpace(string(b)), err
	}, nil)
}
