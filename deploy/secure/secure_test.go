package secure

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadRedisUsers(t *testing.T) {
	us, err := ReadRedisUsers(write(t, "# c\n\nuser a on ~fs:* +get\nuser b on +@all\n"))
	if err != nil || len(us) != 2 || us[0].Name != "a" || strings.Join(us[0].Rules, " ") != "on ~fs:* +get" {
		t.Fatalf("%+v %v", us, err)
	}
	for body, want := range map[string]string{
		"user a on >hunter2 +get\n": "a password in the rules",
		"user a on #0123 +get\n":    "a password in the rules",
		"user a nopass +get\n":      "a password in the rules",
		"acl a on\n":                "want `user NAME RULES...`",
		"user a\n":                  "want `user NAME RULES...`",
	} {
		if _, err := ReadRedisUsers(write(t, body)); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}

func TestReadKafkaUsers(t *testing.T) {
	good := "apiVersion: kafka.strimzi.io/v1beta2\nkind: KafkaUser\nmetadata: {name: u}\nspec:\n  authorization:\n    type: simple\n" +
		"    acls:\n      - resource: {type: topic, name: t, patternType: literal}\n        operations: [Write]\n        host: \"*\"\n"
	us, err := ReadKafkaUsers(write(t, good))
	if err != nil || len(us) != 1 || !us[0].Spec.Authorization.ACLs[0].Allows("topic", "t", "write") ||
		us[0].Spec.Authorization.ACLs[0].Allows("topic", "t2", "Write") || us[0].Spec.Authorization.ACLs[0].Allows("topic", "t", "Read") {
		t.Fatalf("%+v %v", us, err)
	}
	if _, err := ReadKafkaUsers(write(t, strings.Replace(good, "host:", "hots:", 1))); err == nil || !strings.Contains(err.Error(), "hots") {
		t.Errorf("unknown field: %v", err)
	}
	if _, err := ReadKafkaUsers(write(t, strings.Replace(good, "KafkaUser", "KafkaTopic", 1))); err == nil || !strings.Contains(err.Error(), "KafkaTopic") {
		t.Errorf("other kind: %v", err)
	}
}

// TestRepositoryFiles: the manifests' users parse.
func TestRepositoryFiles(t *testing.T) {
	if _, err := ReadRedisUsers("../k8s/base/redis-users.acl"); err != nil {
		t.Error(err)
	}
	us, err := ReadKafkaUsers("../k8s/base/kafka-users.yaml")
	var names []string
	for _, u := range us {
		names = append(names, u.Metadata.Name)
	}
	if want := "flashsale-gateway flashsale-writer flashsale-ops"; err != nil || strings.Join(names, " ") != want {
		t.Errorf("users %q (want %s), %v", names, want, err)
	}
}
