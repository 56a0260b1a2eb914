package manifests

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

const composeFile = "deploy/compose/compose.yaml"

// loadCompose loads and validates the compose file with compose-go, as `docker compose config`
// does, in an environment holding only env.
func loadCompose(t *testing.T, env ...string) (*types.Project, error) {
	t.Helper()
	path, err := filepath.Abs(filepath.Join(repoRoot, composeFile))
	if err != nil {
		t.Fatal(err)
	}
	opts, err := cli.NewProjectOptions([]string{path},
		cli.WithWorkingDirectory(filepath.Dir(path)),
		cli.WithEnv(env),
		cli.WithInterpolation(true),
		cli.WithNormalization(true),
		cli.WithConsistency(true),
	)
	if err != nil {
		t.Fatal(err)
	}
	return opts.LoadProject(context.Background())
}

func TestComposeLoads(t *testing.T) {
	p, err := loadCompose(t, "FLASHSALE_JWT_SECRET=test-secret")
	if err != nil {
		t.Fatalf("compose-go: %v", err)
	}
	if p.Name != "flashsale" {
		t.Errorf("project name %q", p.Name)
	}
	svc := func(name string) types.ServiceConfig {
		t.Helper()
		s, err := p.GetService(name)
		if err != nil {
			t.Fatalf("service %s: %v", name, err)
		}
		return s
	}

	conf := p.Configs["redis-conf"].Content
	for _, line := range []string{"cluster-enabled yes", "maxmemory-policy noeviction", "appendonly yes"} {
		if !hasLine(conf, line) {
			t.Errorf("redis config lacks %q", line)
		}
	}
	for _, n := range []string{"redis-1", "redis-2", "redis-3", "redis-4", "redis-5", "redis-6"} {
		s := svc(n)
		if !strings.HasPrefix(s.Image, "redis:7") || len(s.Configs) != 1 || s.HealthCheck == nil {
			t.Errorf("%s: image %s, configs %d, healthcheck %v", n, s.Image, len(s.Configs), s.HealthCheck != nil)
		}
	}
	create := strings.Join(svc("redis-cluster-create").Command, " ")
	if !strings.Contains(create, "redis-cli --cluster create") || !strings.Contains(create, "--cluster-replicas 1") {
		t.Errorf("redis-cluster-create does not form 3 masters with one replica each: %s", create)
	}
	for _, n := range []string{"kafka-1", "kafka-2", "kafka-3"} {
		s := svc(n)
		if !strings.HasPrefix(s.Image, "apache/kafka:4") {
			t.Errorf("%s image %s, want apache/kafka:4.x", n, s.Image)
		}
		roles := s.Environment["KAFKA_PROCESS_ROLES"]
		if roles == nil || !strings.Contains(*roles, "controller") {
			t.Errorf("%s is not a KRaft controller", n)
		}
		if v := s.Environment["KAFKA_MIN_INSYNC_REPLICAS"]; v == nil || *v != "2" {
			t.Errorf("%s: min.insync.replicas must be 2", n)
		}
		if v := s.Environment["KAFKA_UNCLEAN_LEADER_ELECTION_ENABLE"]; v == nil || *v != "false" {
			t.Errorf("%s: unclean leader election must be off", n)
		}
	}
	if img := svc("postgres").Image; img != "postgres:15" {
		t.Errorf("postgres image %s", img)
	}
	for name, admin := range map[string]string{"gateway": "FLASHSALE_ADMIN", "writer": "FLASHSALE_ADMIN"} {
		target := name
		s := svc(name)
		if s.Build == nil || s.Build.Target != target || s.Build.Dockerfile != "deploy/Dockerfile" {
			t.Errorf("%s build %+v, want deploy/Dockerfile target %s", name, s.Build, target)
			continue
		}
		if ctx, _ := filepath.Abs(filepath.Join(repoRoot)); filepath.Clean(s.Build.Context) != ctx {
			t.Errorf("%s build context %s, want the repository root %s", name, s.Build.Context, ctx)
		}
		for _, k := range []string{"FLASHSALE_REDIS", "KAFKA_BROKERS", admin} {
			if s.Environment[k] == nil {
				t.Errorf("%s has no %s", name, k)
			}
		}
	}
	if v := svc("gateway").Environment["FLASHSALE_JWT_SECRET"]; v == nil || *v != "test-secret" {
		t.Error("gateway does not take FLASHSALE_JWT_SECRET from the environment")
	}
	if svc("writer").Environment["DATABASE_URL"] == nil {
		t.Error("writer has no DATABASE_URL")
	}
	if deps := svc("gateway").DependsOn; deps["redis-cluster-create"].Condition != types.ServiceConditionCompletedSuccessfully {
		t.Error("gateway must wait for the Redis Cluster to be formed")
	}
}

// TestComposeRequiresSecret checks that the staging stack refuses to start on a default secret.
func TestComposeRequiresSecret(t *testing.T) {
	if _, err := loadCompose(t); err == nil || !strings.Contains(err.Error(), "FLASHSALE_JWT_SECRET") {
		t.Fatalf("loading without FLASHSALE_JWT_SECRET: err %v, want a required-variable error", err)
	}
}

// TestComposeVariablesHaveDefaults checks that every interpolated variable other than the
// required secret has a default, so `docker compose up` on a fresh host never substitutes "".
func TestComposeVariablesHaveDefaults(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, composeFile))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "$$", "")
	ref := regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)([^}]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)
	for _, m := range ref.FindAllStringSubmatch(text, -1) {
		switch {
		case m[3] != "":
			t.Errorf("bare $%s: use ${%s:-default}", m[3], m[3])
		case strings.HasPrefix(m[2], ":-") || strings.HasPrefix(m[2], ":?"):
		default:
			t.Errorf("${%s%s} has no default (:-) and is not required (:?)", m[1], m[2])
		}
	}
}
