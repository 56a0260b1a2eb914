package manifests

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"flashsale/deploy/secure"
)

// The production that trusts no network (issue 12): Kafka over TLS with SCRAM users and ACLs,
// Redis over TLS with ACL users, PostgreSQL with a writer that owns the schema and a read-only
// role, every password in a Secret that the manifests only reference.

// TestKafkaTrustsNoNetwork: every listener is TLS with SCRAM-SHA-512, the cluster authorizes, and
// the users' ACLs are the least each service needs.
func TestKafkaTrustsNoNetwork(t *testing.T) {
	for _, dir := range kustomizations {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			objs := build(t, dir)
			k := all[strimziKafka](objs)[0]
			for _, l := range k.Spec.Kafka.Listeners {
				if !l.TLS || l.Authentication == nil || l.Authentication.Type != "scram-sha-512" {
					t.Errorf("listener %s: tls %v, authentication %+v; want TLS and scram-sha-512", l.Name, l.TLS, l.Authentication)
				}
			}
			if a := k.Spec.Kafka.Authorization; a == nil || a.Type != "simple" {
				t.Errorf("Kafka authorization %+v, want simple (ACLs)", a)
			}
			users := map[string]*secure.KafkaUser{}
			for _, u := range all[secure.KafkaUser](objs) {
				users[u.Metadata.Name] = u
				if u.Metadata.Labels["strimzi.io/cluster"] != k.Metadata.Name {
					t.Errorf("KafkaUser %s belongs to %q", u.Metadata.Name, u.Metadata.Labels["strimzi.io/cluster"])
				}
				ref := u.Spec.Authentication.Password.ValueFrom.SecretKeyRef
				if u.Spec.Authentication.Type != "scram-sha-512" || ref.Name == "" || ref.Key == "" || u.Spec.Authorization.Type != "simple" {
					t.Errorf("KafkaUser %s: authentication %+v, authorization %s; want scram-sha-512 with a Secret reference, simple", u.Metadata.Name, u.Spec.Authentication, u.Spec.Authorization.Type)
				}
			}
			const orders, dlq, group = "flash-sale-orders", "flash-sale-orders.dlq", "flashsale-writer"
			checkACLs(t, users["flashsale-gateway"], "gateway",
				[]acl{{"topic", orders, "Write"}, {"topic", orders, "Describe"}},
				[]acl{{"topic", orders, "Read"}, {"topic", dlq, "Write"}, {"topic", dlq, "Read"}, {"group", group, "Read"},
					{"topic", orders, "Delete"}, {"topic", orders, "Alter"}, {"cluster", "kafka-cluster", "Alter"}, {"topic", "other", "Write"}})
			checkACLs(t, users["flashsale-writer"], "writer",
				[]acl{{"topic", orders, "Read"}, {"topic", orders, "Describe"}, {"group", group, "Read"}, {"topic", dlq, "Write"}},
				[]acl{{"topic", orders, "Write"}, {"topic", dlq, "Read"}, {"topic", orders, "Delete"}, {"group", "other", "Read"},
					{"cluster", "kafka-cluster", "Alter"}, {"topic", "other", "Write"}})
			// The ops pod reads the writers' lag (reconcile --repair, toolbox) and nothing else.
			checkACLs(t, users["flashsale-ops"], "ops pod",
				[]acl{{"topic", orders, "Describe"}, {"group", group, "Describe"}},
				[]acl{{"topic", orders, "Read"}, {"topic", orders, "Write"}, {"group", group, "Read"}, {"topic", dlq, "Read"},
					{"topic", dlq, "Write"}, {"topic", orders, "Delete"}, {"cluster", "kafka-cluster", "Alter"}, {"topic", "other", "Describe"}})
			if len(users) != 3 {
				t.Errorf("%d KafkaUsers, want 3 (gateway, writer and the ops pod; the preload Job and the bench use no Kafka)", len(users))
			}
			for name, wl := range map[string][2]string{"flashsale-gateway": {"flashsale-gateway", "gateway"},
				"flashsale-writer": {"flashsale-writer", "writer"}, "flashsale-ops": {"flashsale-ops", "flashctl"}} {
				c, spec := workload(t, objs, wl[0], wl[1])
				checkSecretFile(t, c, spec, "FLASHSALE_KAFKA_USER", name, "FLASHSALE_KAFKA_PASSWORD_FILE",
					users[name].Spec.Authentication.Password.ValueFrom.SecretKeyRef.Name, users[name].Spec.Authentication.Password.ValueFrom.SecretKeyRef.Key)
			}
		})
	}
}

type acl struct{ typ, name, op string }

func checkACLs(t *testing.T, u *secure.KafkaUser, who string, allowed, denied []acl) {
	t.Helper()
	if u == nil {
		t.Errorf("no KafkaUser for the %s", who)
		return
	}
	allows := func(a acl) bool {
		for _, r := range u.Spec.Authorization.ACLs {
			if r.Allows(a.typ, a.name, a.op) {
				return true
			}
		}
		return false
	}
	for _, a := range allowed {
		if !allows(a) {
			t.Errorf("the %s may not %s %s %s; it needs to", who, a.op, a.typ, a.name)
		}
	}
	for _, a := range denied {
		if allows(a) {
			t.Errorf("the %s may %s %s %s; it must not", who, a.op, a.typ, a.name)
		}
	}
}

// TestRedisTrustsNoNetwork: TLS only, the default user off, and ACL users that cannot flush,
// reconfigure, scan or reach keys that are not the flash sale's.
func TestRedisTrustsNoNetwork(t *testing.T) {
	users, err := secure.ReadRedisUsers(filepath.Join(repoRoot, "deploy/k8s/base/redis-users.acl"))
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string][]string{}
	for _, u := range users {
		rules[u.Name] = u.Rules
	}
	for _, name := range []string{"gateway", "writer"} {
		r := rules[name]
		if len(r) == 0 {
			t.Fatalf("no Redis ACL user %s", name)
		}
		if !slices.Contains(r, "-@all") || !slices.Contains(r, "-@dangerous") || slices.Contains(r, "+@all") {
			t.Errorf("Redis user %s: rules must start from -@all, drop -@dangerous and never add +@all: %v", name, r)
		}
		var keys []string
		for _, x := range r {
			if strings.HasPrefix(x, "~") || strings.HasPrefix(x, "%") || x == "allkeys" {
				keys = append(keys, x)
			}
			for _, bad := range []string{"flushall", "flushdb", "keys", "scan", "config", "debug", "acl", "shutdown", "migrate",
				"restore", "monitor", "cluster|failover", "cluster|reset", "cluster|setslot", "script|flush", "@admin", "@dangerous", "@keyspace"} {
				if strings.EqualFold(x, "+"+bad) || strings.HasPrefix(strings.ToLower(x), "+"+bad+"|") {
					t.Errorf("Redis user %s is granted %s", name, x)
				}
			}
		}
		if !slices.Equal(keys, []string{"~fs:*", "~{*"}) {
			t.Errorf("Redis user %s reaches keys %v, want only ~fs:* and ~{*", name, keys)
		}
	}
	if r := rules["ops"]; !slices.Contains(r, "-@dangerous") {
		t.Errorf("Redis user ops: %v, want -@dangerous", r)
	}
	for _, dir := range kustomizations {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			objs := build(t, dir)
			cm := mustFind[corev1.ConfigMap](t, objs, "redis-cluster")
			for _, line := range []string{"port 0", "tls-port 6379", "tls-cluster yes", "tls-replication yes", "aclfile /run/redis/users.acl", "masteruser replication"} {
				if !hasLine(cm.Data["redis.conf"], line) {
					t.Errorf("redis.conf lacks %q", line)
				}
			}
			if !strings.Contains(cm.Data["render-acl.sh"], `echo "user default off"`) {
				t.Error("the rendered users.acl must turn the default user off")
			}
			acl, _ := byPrefix[corev1.ConfigMap](objs, "flashsale-redis-acl")
			if acl == nil || !strings.Contains(acl.Data["redis-users.acl"], "user gateway ") {
				t.Fatal("no ConfigMap flashsale-redis-acl with redis-users.acl")
			}
			ss := mustFind[appsv1.StatefulSet](t, objs, "redis-cluster")
			if p := container(t, ss.Spec.Template.Spec, "redis").ReadinessProbe; p == nil || p.Exec == nil || !strings.Contains(strings.Join(p.Exec.Command, " "), "--tls") {
				t.Error("the redis readiness probe must speak TLS (the plain port is off)")
			}
			for wl, user := range map[string]string{"gateway": "gateway", "writer": "writer"} {
				c, spec := workload(t, objs, "flashsale-"+wl, wl)
				checkSecretFile(t, c, spec, "FLASHSALE_REDIS_USER", user, "FLASHSALE_REDIS_PASSWORD_FILE", "flashsale-redis-users", user)
			}
			c, spec := workload(t, objs, "flashsale-ops", "flashctl")
			checkSecretFile(t, c, spec, "FLASHSALE_REDIS_USER", "ops", "FLASHSALE_REDIS_PASSWORD_FILE", "flashsale-redis-users", "ops")
			job := mustFind[batchv1.Job](t, objs, "flashsale-preload")
			c = container(t, job.Spec.Template.Spec, "flashctl")
			checkSecretFile(t, c, job.Spec.Template.Spec, "FLASHSALE_REDIS_USER", "ops", "FLASHSALE_REDIS_PASSWORD_FILE", "flashsale-redis-users", "ops")
		})
	}
}

// TestPostgresRoles: the writer's role owns the database (the ops pod creates sales with it),
// the preload Job reads with a read-only role,
// and production checks the server's certificate (sslmode=verify-full).
func TestPostgresRoles(t *testing.T) {
	for _, dir := range kustomizations {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			objs := build(t, dir)
			pg := all[cnpgCluster](objs)[0]
			if pg.Spec.Bootstrap.InitDB.Owner != "flashsale_writer" {
				t.Errorf("database owner %q, want flashsale_writer (the writer owns its schema)", pg.Spec.Bootstrap.InitDB.Owner)
			}
			ro := false
			if pg.Spec.Managed != nil {
				for _, r := range pg.Spec.Managed.Roles {
					ro = ro || r.Name == "flashsale_ro" && r.Login && slices.Equal(r.InRoles, []string{"pg_read_all_data"}) && r.PasswordSecret.Name == "flashsale-pg-ro"
				}
			}
			if !ro {
				t.Error("no managed role flashsale_ro (login, pg_read_all_data only, password in Secret flashsale-pg-ro)")
			}
			cm, _ := byPrefix[corev1.ConfigMap](objs, "flashsale-config")
			// The ops pod runs `sale create`, which writes the sale's rows: the owner's role.
			for wl, key := range map[string]string{"writer": "FLASHSALE_WRITER_DATABASE_URL", "flashctl": "FLASHSALE_OPS_DATABASE_URL", "ops": "FLASHSALE_WRITER_DATABASE_URL"} {
				var c corev1.Container
				var spec corev1.PodSpec
				switch wl {
				case "writer":
					c, spec = workload(t, objs, "flashsale-writer", "writer")
				case "ops":
					c, spec = workload(t, objs, "flashsale-ops", "flashctl")
				default:
					job := mustFind[batchv1.Job](t, objs, "flashsale-preload")
					spec = job.Spec.Template.Spec
					c = container(t, spec, "flashctl")
				}
				e := env(c, "FLASHSALE_DATABASE_URL")
				if e == nil || e.ValueFrom == nil || e.ValueFrom.ConfigMapKeyRef == nil || e.ValueFrom.ConfigMapKeyRef.Key != key {
					t.Errorf("%s: FLASHSALE_DATABASE_URL must come from flashsale-config %s", wl, key)
				}
				url := cm.Data[key]
				role := map[string]string{"writer": "flashsale_writer", "flashctl": "flashsale_ro", "ops": "flashsale_writer"}[wl]
				if !strings.HasPrefix(url, "postgres://"+role+"@") {
					t.Errorf("%s connects as %q, want role %s", wl, url, role)
				}
				if dir == "deploy/k8s/overlays/prod" && (!strings.Contains(url, "sslmode=verify-full") || !strings.Contains(url, "sslrootcert=/etc/flashsale/pg-ca/ca.crt")) {
					t.Errorf("production %s URL %q: want sslmode=verify-full against the cluster CA", wl, url)
				}
				if !strings.Contains(url, "sslmode=require") && !strings.Contains(url, "sslmode=verify-") {
					t.Errorf("%s URL %q allows a connection without TLS", wl, url)
				}
				secret := map[string]string{"writer": "flashsale-pg-app", "flashctl": "flashsale-pg-ro", "ops": "flashsale-pg-app"}[wl]
				checkSecretFile(t, c, spec, "", "", "FLASHSALE_DATABASE_PASSWORD_FILE", secret, "password")
			}
		})
	}
}

// TestNoSecretValueInManifests: no manifest carries a password or key; env variables with a
// secret's name are references or file paths; only the dev overlay's known dev JWT secret is a
// literal.
func TestNoSecretValueInManifests(t *testing.T) {
	secretName := regexp.MustCompile(`(?i)(PASSWORD|SECRET|TOKEN|_KEY$|AUTH)`)
	credURL := regexp.MustCompile(`://[^/@\s:]+:[^/@\s]+@`)
	aclPassword := regexp.MustCompile(`(?m)^\s*user \S+ .*\s[>#][0-9A-Za-z]`)
	for _, dir := range kustomizations {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			objs := build(t, dir)
			for _, s := range all[corev1.Secret](objs) {
				for k, v := range s.Data {
					if len(v) > 0 && !(dir == "deploy/k8s/overlays/dev" && k == "FLASHSALE_JWT_SECRET" && string(v) == "dev-secret-change-me") {
						t.Errorf("Secret %s holds a value for %s in the manifests", s.Name, k)
					}
				}
				for k := range s.StringData {
					t.Errorf("Secret %s holds stringData %s in the manifests", s.Name, k)
				}
			}
			for _, cm := range all[corev1.ConfigMap](objs) {
				for k, v := range cm.Data {
					if credURL.MatchString(v) || aclPassword.MatchString(v) {
						t.Errorf("ConfigMap %s key %s holds a credential", cm.Name, k)
					}
				}
			}
			for _, o := range objs {
				spec := podSpec(o.obj)
				if spec == nil {
					continue
				}
				for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
					for _, e := range c.Env {
						if e.Value != "" && secretName.MatchString(e.Name) && !strings.HasSuffix(e.Name, "_FILE") {
							t.Errorf("%s/%s: env %s has a literal value", o.name, c.Name, e.Name)
						}
						if credURL.MatchString(e.Value) {
							t.Errorf("%s/%s: env %s holds a URL with a password", o.name, c.Name, e.Name)
						}
					}
				}
			}
		})
	}
	// The sources too, including files no build reads.
	_ = filepath.WalkDir(filepath.Join(repoRoot, "deploy/k8s"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		for _, re := range []*regexp.Regexp{credURL, regexp.MustCompile(`(?m)^[ \t]*password:[ \t]*[^\s{]`), aclPassword, regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY`)} {
			if re.Match(b) {
				t.Errorf("%s holds a credential (%s)", p, re)
			}
		}
		return nil
	})
}

// workload returns the container name of Deployment dep and its pod spec.
func workload(t *testing.T, objs []object, dep, name string) (corev1.Container, corev1.PodSpec) {
	t.Helper()
	d := mustFind[appsv1.Deployment](t, objs, dep)
	return container(t, d.Spec.Template.Spec, name), d.Spec.Template.Spec
}

// checkSecretFile: env userVar is user (when named), and env fileVar names a file mounted from
// key of Secret secret.
func checkSecretFile(t *testing.T, c corev1.Container, spec corev1.PodSpec, userVar, user, fileVar, secret, key string) {
	t.Helper()
	if userVar != "" {
		if e := env(c, userVar); e == nil || e.Value != user {
			t.Errorf("%s: %s is %v, want %s", c.Name, userVar, e, user)
		}
	}
	e := env(c, fileVar)
	if e == nil || e.Value == "" {
		t.Errorf("%s: no %s", c.Name, fileVar)
		return
	}
	for _, m := range c.VolumeMounts {
		rel, err := filepath.Rel(m.MountPath, e.Value)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			for _, it := range v.Secret.Items {
				if v.Secret.SecretName == secret && it.Key == key && it.Path == rel {
					return
				}
			}
		}
	}
	t.Errorf("%s: %s=%s is not key %s of Secret %s mounted", c.Name, fileVar, e.Value, key, secret)
}
