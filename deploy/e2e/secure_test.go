package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/rueidis"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"flashsale/deploy/secure"
	"flashsale/deploy/testenv"
	"flashsale/sharding"
	shared "flashsale/sharding/config"
	"flashsale/sharding/stock"
)

// secureStack is the local stack's secure endpoints (deploy/stack/secure.sh):
// TLS with the stack's CA, and users with passwords in files.
type secureStack struct {
	redis, kafka, db, ca, secrets string
}

func needSecure(t *testing.T) secureStack {
	t.Helper()
	need(t)
	s := secureStack{redis: os.Getenv("FLASHSALE_SECURE_REDIS"), kafka: os.Getenv("FLASHSALE_SECURE_KAFKA"),
		db: os.Getenv("FLASHSALE_SECURE_DATABASE_URL"), ca: os.Getenv("FLASHSALE_TLS_CA"), secrets: os.Getenv("FLASHSALE_SECRETS_DIR")}
	if os.Getenv("FLASHSALE_BROKER") == "kfake" {
		testenv.Missing(t, "the kfake fallback broker has no SASL_SSL listener; the secure path needs Apache Kafka (java and mvn: make up runs it then)")
	}
	if s.redis == "" || s.kafka == "" || s.db == "" || s.ca == "" || s.secrets == "" {
		testenv.Missing(t, "the secure endpoints are not in the environment (FLASHSALE_SECURE_*): source .run/env of a stack started by this make up")
	}
	return s
}

func (s secureStack) secret(name string) string { return filepath.Join(s.secrets, name) }

// redisFlags are the production flags for Redis ACL user over TLS.
func (s secureStack) redisFlags(user string) []string {
	return []string{"-redis", s.redis, "-redis-tls", "-redis-tls-ca", s.ca, "-redis-user", user,
		"-redis-password-file", s.secret(user)}
}

// kafkaFlags are the production flags for Kafka SCRAM user over TLS.
func (s secureStack) kafkaFlags(user string) []string {
	return []string{"-kafka-brokers", s.kafka, "-kafka-tls", "-kafka-tls-ca", s.ca, "-kafka-sasl", "scram-sha-512",
		"-kafka-user", user, "-kafka-password-file", s.secret("kafka-" + user)}
}

// dbFlags are the writer's PostgreSQL flags: its role over verify-full TLS.
func (s secureStack) dbFlags() []string {
	return []string{"-database-url", s.db, "-database-password-file", s.secret("pg-flashsale_writer")}
}

// common loads args into sharding/config's Common as a binary would.
func (s secureStack) common(t *testing.T, parts shared.Parts, args ...string) shared.Common {
	t.Helper()
	c := shared.NewCommon("", time.Second)
	set := shared.NewSet("test", "")
	c.Register(set, parts)
	if err := set.Parse(args, func(string) string { return "" }, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Resolve(); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSecurePurchasePath runs the purchase path the way production does:
// gateway -> Redis (TLS, ACL user gateway) -> journal -> relay -> Kafka
// (SASL_SSL, SCRAM user flashsale-gateway) -> writer (flashsale-writer, Redis
// user writer) -> PostgreSQL (role flashsale_writer over verify-full TLS, in
// the database it owns), under the ACLs of deploy/k8s/base, and checks that
// those refuse what they should.
func TestSecurePurchasePath(t *testing.T) {
	s := needSecure(t)
	topic := testenv.NewTopic(t, "secure")
	dlq := testenv.NewTopic(t, "secure-dlq")
	group := topic + "-writers"
	applyKafkaACLs(t, s, map[string]string{"flash-sale-orders": topic, "flash-sale-orders.dlq": dlq, "flashsale-writer": group})

	writerFlags := append(append(s.redisFlags("writer"), s.kafkaFlags("flashsale-writer")...), s.dbFlags()...)
	if out, err := exec.Command(filepath.Join(binDir, "writer"), append([]string{"migrate"}, writerFlags...)...).CombinedOutput(); err != nil {
		t.Fatalf("writer migrate as flashsale_writer: %v\n%s", err, out)
	}
	sl := createSecureSale(t, s, 20)
	start(t, "writer", append([]string{"run", "-topic", topic, "-dlq-topic", dlq, "-group", group,
		"-sales", strconv.FormatInt(sl.ID, 10), "-admin", ""}, writerFlags...)...)
	g := startGateway(t, topic, sl, append(s.redisFlags("gateway"), s.kafkaFlags("flashsale-gateway")...)...)
	g.waitReady(t, 30*time.Second)

	buyers := crowd(t, 30)
	answers := buyAll(sl, buyers, 8, func(int) string { return g.addr })
	if got := tally(answers); got[202] != 20 || got[410] != 10 {
		t.Fatalf("answers %v: want 20 x 202 and 10 x 410", got)
	}
	ro := readOnlyDB(t, s)
	waitOrders(t, ro, sl.ID, 20, 60*time.Second)
	if _, err := ro.Exec(context.Background(), "DELETE FROM orders WHERE sale_id = $1", sl.ID); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("flashsale_ro deleted orders: %v", err)
	}
	// The ops tool reads with the read-only role.
	roFlags := append(s.redisFlags("ops"), "-database-url", strings.Replace(s.db, "flashsale_writer@", "flashsale_ro@", 1),
		"-database-password-file", s.secret("pg-flashsale_ro"), "status", "--sale", strconv.FormatInt(sl.ID, 10))
	if out, err := exec.Command(filepath.Join(binDir, "flashctl"), roFlags...).CombinedOutput(); err != nil {
		t.Errorf("flashctl status as flashsale_ro and Redis user ops: %v\n%s", err, out)
	}
	checkOpsPod(t, s, topic, group)
	checkRedisRefusals(t, s)
	checkKafkaRefusals(t, s, topic, dlq, group)
	checkPlainRefused(t, s)
}

// applyKafkaACLs gives the production Kafka users their ACLs on this test's
// topics and group (over the plain listener, whose ANONYMOUS is the local
// super user) and removes them when the test ends.
func applyKafkaACLs(t *testing.T, s secureStack, rename map[string]string) {
	t.Helper()
	users, err := secure.ReadKafkaUsers(filepath.Join(root, "deploy/k8s/base/kafka-users.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = secure.ApplyKafka(ctx, adm, users, func(u string) (string, error) {
		b, err := os.ReadFile(s.secret("kafka-" + u))
		return strings.TrimSpace(string(b)), err
	}, func(n string) string {
		if r, ok := rename[n]; ok {
			return r
		}
		t.Fatalf("kafka-users.yaml names %q, which this test does not map", n)
		return n
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var topics, groups []string
		for old, n := range rename {
			if strings.HasPrefix(old, "flash-sale-orders") {
				topics = append(topics, n)
			} else {
				groups = append(groups, n)
			}
		}
		b := kadm.NewACLs().Topics(topics...).Groups(groups...).ResourcePatternType(kadm.ACLPatternLiteral).
			Operations(kadm.OpAny).Allow().AllowHosts()
		if _, err := adm.DeleteACLs(context.Background(), b); err != nil {
			t.Logf("deleting the test's ACLs: %v", err)
		}
	})
}

// createSecureSale runs `flashctl sale create` with the Redis user ops and,
// since it writes the sale's rows, the writer's PostgreSQL role.
func createSecureSale(t *testing.T, s secureStack, units int64) *createdSale {
	t.Helper()
	id := int64(time.Now().UnixNano()%(sharding.MaxSaleID-20_000_000)) + 20_000_000
	item := id*10 + 1
	now := time.Now()
	body := map[string]any{"id": id, "name": "secure " + t.Name(), "startsAt": now.Add(-time.Minute).UTC().Format(time.RFC3339),
		"endsAt": now.Add(time.Hour).UTC().Format(time.RFC3339), "paymentWindow": "10m",
		"items": []map[string]any{{"id": item, "name": "thing", "price": 100, "currency": "JPY", "quantity": units}}}
	b, _ := json.Marshal(body)
	file := filepath.Join(t.TempDir(), "sale.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(append(s.redisFlags("ops"), s.dbFlags()...), "sale", "create", "--file", file, "--shards", "3")
	if out, err := exec.Command(filepath.Join(binDir, "flashctl"), args...).CombinedOutput(); err != nil {
		t.Fatalf("flashctl sale create: %v\n%s", err, out)
	}
	sl, err := stock.New(testenv.NewRedis(t)).LoadSale(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return &createdSale{Sale: sl, item: item}
}

// readOnlyDB connects as flashsale_ro, the ops tool's and audit's role.
func readOnlyDB(t *testing.T, s secureStack) *pgx.Conn {
	t.Helper()
	c := s.common(t, shared.UsePostgres, "-database-url", strings.Replace(s.db, "flashsale_writer@", "flashsale_ro@", 1),
		"-database-password-file", s.secret("pg-flashsale_ro"))
	pc, err := c.Postgres.PoolConfig()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, pc.ConnConfig)
	if err != nil {
		t.Fatalf("connecting as flashsale_ro: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	var ssl bool
	if err := conn.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil || !ssl {
		t.Fatalf("flashsale_ro's connection is not TLS (%v, %v)", ssl, err)
	}
	return conn
}

func waitOrders(t *testing.T, db *pgx.Conn, saleID int64, want int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var n int
		if err := db.QueryRow(context.Background(), "SELECT count(*) FROM orders WHERE sale_id = $1 AND status = 'PENDING'", saleID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d PENDING orders in PostgreSQL after %v, want %d", n, within, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkRedisRefusals: the gateway's ACL user cannot flush, reconfigure or
// touch keys outside the flash sale's, and a wrong password is refused.
func checkRedisRefusals(t *testing.T, s secureStack) {
	t.Helper()
	c := s.common(t, shared.UseRedis, s.redisFlags("gateway")...)
	rc, err := rueidis.NewClient(c.Redis.ClientOption())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	ctx := context.Background()
	for name, cmd := range map[string]rueidis.Completed{
		"FLUSHALL":         rc.B().Flushall().Build(),
		"CONFIG GET":       rc.B().ConfigGet().Parameter("*").Build(),
		"SET outside fs:*": rc.B().Set().Key("other:secure-test").Value("x").Build(),
		"KEYS":             rc.B().Keys().Pattern("*").Build(),
		"CLUSTER FAILOVER": rc.B().ClusterFailover().Build(),
		"SCRIPT FLUSH":     rc.B().ScriptFlush().Build(),
		"ACL LIST":         rc.B().AclList().Build(),
		"FLUSHDB via EVAL": rc.B().Eval().Script("return redis.call('FLUSHDB')").Numkeys(1).Key("fs:x").Build(),
	} {
		// A script's refused redis.call says so in its own words.
		if err := rc.Do(ctx, cmd).Error(); err == nil || !strings.Contains(err.Error(), "NOPERM") && !strings.Contains(err.Error(), "can't run this command") {
			t.Errorf("gateway user: %s answered %v, want NOPERM", name, err)
		}
	}
	if err := rc.Do(ctx, rc.B().Get().Key("fs:secure-probe").Build()).Error(); err != nil && !rueidis.IsRedisNil(err) {
		t.Errorf("gateway user: GET fs:secure-probe: %v, want it allowed", err)
	}
	opt := c.Redis.ClientOption()
	opt.Password = "wrong-password"
	if bad, err := rueidis.NewClient(opt); err == nil {
		bad.Close()
		t.Error("a wrong Redis password connected")
	} else if !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("wrong Redis password: %v, want WRONGPASS", err)
	}
}

// checkOpsPod runs `flashctl toolbox --once` with the ops pod's settings
// (deploy/k8s/base/ops.yaml): Redis user ops, the database owner's role,
// Kafka user flashsale-ops, the group and topic from the writer's variables.
// It must reach all three and read the writers' lag: what reconcile --repair
// needs before it releases an orphan.
func checkOpsPod(t *testing.T, s secureStack, topic, group string) {
	t.Helper()
	args := append(append(append(s.redisFlags("ops"), s.kafkaFlags("flashsale-ops")...), s.dbFlags()...), "toolbox", "--once")
	cmd := exec.Command(filepath.Join(binDir, "flashctl"), args...)
	cmd.Env = append(os.Environ(), "FLASHSALE_GROUP="+group, "FLASHSALE_TOPIC="+topic)
	out, err := cmd.CombinedOutput()
	if err != nil || !regexp.MustCompile(`toolbox ok: redis ok \(6 nodes answer\); postgresql ok; kafka ok \(group `+
		regexp.QuoteMeta(group)+` has \d+ records of `+regexp.QuoteMeta(topic)+` to persist\)`).Match(out) {
		t.Errorf("flashctl toolbox --once with the ops pod's settings: %v\n%s", err, out)
	}
}

// checkKafkaRefusals: the gateway may not write the dead-letter topic nor
// read the orders; the writer may not write the orders topic; the ops pod
// may neither write nor read them, nor join the writers' group.
func checkKafkaRefusals(t *testing.T, s secureStack, topic, dlq, group string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	produce := func(user, to string) error {
		c := s.common(t, shared.UseKafka, s.kafkaFlags(user)...)
		cl, err := kgo.NewClient(append(c.Kafka.Opts(), kgo.RecordRetries(2))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		return cl.ProduceSync(ctx, &kgo.Record{Topic: to, Value: []byte("x")}).FirstErr()
	}
	if err := produce("flashsale-gateway", dlq); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("gateway wrote the dead-letter topic: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if err := produce("flashsale-writer", topic); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("writer wrote the orders topic: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// With no Write anywhere, the ops user is refused the idempotent
	// producer's id already (the cluster's IdempotentWrite comes with a Write).
	if err := produce("flashsale-ops", topic); !errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("the ops pod wrote the orders topic: %v, want TOPIC_ or CLUSTER_AUTHORIZATION_FAILED", err)
	}
	consume := func(user, as string) {
		c := s.common(t, shared.UseKafka, s.kafkaFlags(user)...)
		cl, err := kgo.NewClient(append(c.Kafka.Opts(), kgo.ConsumeTopics(topic), kgo.ConsumerGroup(as))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		fs := cl.PollFetches(ctx)
		var denied bool
		for _, e := range fs.Errors() {
			denied = denied || errors.Is(e.Err, kerr.GroupAuthorizationFailed) || errors.Is(e.Err, kerr.TopicAuthorizationFailed)
		}
		if !denied || fs.NumRecords() > 0 {
			t.Errorf("%s consumed the orders topic as group %s: %d records, errors %v", user, as, fs.NumRecords(), fs.Errors())
		}
	}
	consume("flashsale-gateway", topic+"-thief")
	consume("flashsale-ops", group)
}

// checkPlainRefused: the secure endpoints refuse plaintext, and the writer's
// role is refused without TLS.
func checkPlainRefused(t *testing.T, s secureStack) {
	t.Helper()
	addr := strings.Split(s.redis, ",")[0]
	if c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true}); err == nil {
		c.Close()
		t.Errorf("plaintext Redis on the TLS port %s connected", addr)
	}
	plain := strings.Replace(strings.Split(s.db, "?")[0], "flashsale_writer@", "flashsale_writer:"+readSecret(t, s.secret("pg-flashsale_writer"))+"@", 1) + "?sslmode=disable"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c, err := pgx.Connect(ctx, plain); err == nil {
		_ = c.Close(ctx)
		t.Error("flashsale_writer connected to PostgreSQL without TLS")
	} else if !strings.Contains(err.Error(), "no encryption") {
		t.Errorf("flashsale_writer without TLS: %v, want pg_hba's rejection", err)
	}
}

func readSecret(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
