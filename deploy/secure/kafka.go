// Package secure applies the production users and rights of the manifests
// (deploy/k8s/base/kafka-users.yaml, deploy/k8s/base/redis-users.acl) to a
// broker and reads them for the manifest tests: the local stack provisions its
// secure endpoints with it (deploy/secure/provision), so the integration test
// that runs the purchase path over TLS with passwords runs it under the very
// ACLs production has.
package secure

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.yaml.in/yaml/v3"
)

// KafkaUser is the part of a Strimzi kafka.strimzi.io/v1beta2 KafkaUser the
// manifests use; unknown fields are refused.
type KafkaUser struct {
	APIVersion string `yaml:"apiVersion" json:"apiVersion"`
	Kind       string `yaml:"kind" json:"kind"`
	Metadata   struct {
		Name      string            `yaml:"name" json:"name"`
		Namespace string            `yaml:"namespace,omitempty" json:"namespace,omitempty"`
		Labels    map[string]string `yaml:"labels" json:"labels"`
	} `yaml:"metadata" json:"metadata"`
	Spec struct {
		Authentication struct {
			Type     string `yaml:"type" json:"type"`
			Password struct {
				ValueFrom struct {
					SecretKeyRef struct {
						Name string `yaml:"name" json:"name"`
						Key  string `yaml:"key" json:"key"`
					} `yaml:"secretKeyRef" json:"secretKeyRef"`
				} `yaml:"valueFrom" json:"valueFrom"`
			} `yaml:"password" json:"password"`
		} `yaml:"authentication" json:"authentication"`
		Authorization struct {
			Type string `yaml:"type" json:"type"`
			ACLs []ACL  `yaml:"acls" json:"acls"`
		} `yaml:"authorization" json:"authorization"`
	} `yaml:"spec" json:"spec"`
}

// ACL is one Strimzi simple-authorization rule.
type ACL struct {
	Resource struct {
		Type        string `yaml:"type" json:"type"` // topic, group, cluster, transactionalId
		Name        string `yaml:"name" json:"name"`
		PatternType string `yaml:"patternType" json:"patternType"` // literal or prefix
	} `yaml:"resource" json:"resource"`
	Operations []string `yaml:"operations" json:"operations"`
	Host       string   `yaml:"host" json:"host"`
}

// Allows reports whether the ACL lets op (say "Write") on the resource of
// type typ (say "topic") called name.
func (a ACL) Allows(typ, name, op string) bool {
	if !strings.EqualFold(a.Resource.Type, typ) {
		return false
	}
	match := a.Resource.Name == name || a.Resource.Name == "*"
	if a.Resource.PatternType == "prefix" {
		match = strings.HasPrefix(name, a.Resource.Name)
	}
	for _, o := range a.Operations {
		if match && (strings.EqualFold(o, op) || strings.EqualFold(o, "All")) {
			return true
		}
	}
	return false
}

// ReadKafkaUsers reads the KafkaUser documents of a YAML file.
func ReadKafkaUsers(path string) ([]KafkaUser, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var out []KafkaUser
	for {
		var u KafkaUser
		err := dec.Decode(&u)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if u.Kind != "KafkaUser" {
			return nil, fmt.Errorf("%s: a %q where a KafkaUser was expected", path, u.Kind)
		}
		out = append(out, u)
	}
}

// ApplyKafka gives every user its SCRAM-SHA-512 password (password(name))
// and its ACLs, with every resource name mapped through rename (tests run the
// production ACLs on their own topics; nil keeps the names). It runs as a
// principal allowed to alter users and ACLs. Applying twice changes nothing.
func ApplyKafka(ctx context.Context, adm *kadm.Client, users []KafkaUser, password func(user string) (string, error), rename func(string) string) error {
	if rename == nil {
		rename = func(s string) string { return s }
	}
	var upserts []kadm.UpsertSCRAM
	for _, u := range users {
		pw, err := password(u.Metadata.Name)
		if err != nil {
			return err
		}
		upserts = append(upserts, kadm.UpsertSCRAM{User: u.Metadata.Name, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: pw})
	}
	res, err := adm.AlterUserSCRAMs(ctx, nil, upserts)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("setting SCRAM credentials: %w", err)
	}
	for _, u := range users {
		for _, a := range u.Spec.Authorization.ACLs {
			if err := createACL(ctx, adm, "User:"+u.Metadata.Name, a, rename(a.Resource.Name)); err != nil {
				return fmt.Errorf("user %s: %w", u.Metadata.Name, err)
			}
		}
	}
	return nil
}

func createACL(ctx context.Context, adm *kadm.Client, principal string, a ACL, name string) error {
	b := kadm.NewACLs().Allow(principal).AllowHosts(a.Host)
	switch a.Resource.Type {
	case "topic":
		b = b.Topics(name)
	case "group":
		b = b.Groups(name)
	case "cluster":
		b = b.Clusters()
	case "transactionalId":
		b = b.TransactionalIDs(name)
	default:
		return fmt.Errorf("resource type %q", a.Resource.Type)
	}
	if a.Resource.PatternType == "prefix" {
		b = b.ResourcePatternType(kadm.ACLPatternPrefixed)
	}
	var ops []kadm.ACLOperation
	for _, o := range a.Operations {
		op, err := kmsg.ParseACLOperation(o)
		if err != nil {
			return err
		}
		ops = append(ops, op)
	}
	b = b.Operations(ops...)
	res, err := adm.CreateACLs(ctx, b)
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("acl %s %s %s: %w (%s)", r.Type, r.Name, r.Operation, r.Err, r.ErrMessage)
		}
	}
	return nil
}
