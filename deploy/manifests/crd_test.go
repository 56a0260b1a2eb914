package manifests

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The operators' custom resources have no k8s.io/api type. These structs hold exactly the fields
// the manifests use (checked with unknown fields refused, like the built-in kinds), so a misspelt
// or misplaced field fails here rather than being dropped by the operator's API server. Field
// names follow Strimzi's kafka.strimzi.io/v1beta2 and CloudNativePG's postgresql.cnpg.io/v1 CRDs.

// crdMeta is the part of ObjectMeta the custom resources use.
type crdMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type crdHeader struct {
	APIVersion string  `json:"apiVersion"`
	Kind       string  `json:"kind"`
	Metadata   crdMeta `json:"metadata"`
}

type strimziKafka struct {
	crdHeader
	Spec struct {
		Kafka struct {
			Version   string `json:"version"`
			Listeners []struct {
				Name           string `json:"name"`
				Port           int    `json:"port"`
				Type           string `json:"type"`
				TLS            bool   `json:"tls"`
				Authentication *struct {
					Type string `json:"type"`
				} `json:"authentication,omitempty"`
			} `json:"listeners"`
			Authorization *struct {
				Type string `json:"type"`
			} `json:"authorization,omitempty"`
			Config map[string]any `json:"config"`
			Rack   *struct {
				TopologyKey string `json:"topologyKey"`
			} `json:"rack,omitempty"`
		} `json:"kafka"`
		EntityOperator struct {
			TopicOperator *struct{} `json:"topicOperator,omitempty"`
			UserOperator  *struct{} `json:"userOperator,omitempty"`
		} `json:"entityOperator"`
	} `json:"spec"`
}

type strimziNodePool struct {
	crdHeader
	Spec struct {
		Replicas int      `json:"replicas"`
		Roles    []string `json:"roles"`
		Storage  struct {
			Type    string `json:"type"`
			Volumes []struct {
				ID            int    `json:"id"`
				Type          string `json:"type"`
				Size          string `json:"size"`
				DeleteClaim   bool   `json:"deleteClaim"`
				KRaftMetadata string `json:"kraftMetadata,omitempty"`
			} `json:"volumes"`
		} `json:"storage"`
		Resources corev1.ResourceRequirements `json:"resources"`
	} `json:"spec"`
}

type strimziTopic struct {
	crdHeader
	Spec struct {
		TopicName  string         `json:"topicName"`
		Partitions int            `json:"partitions"`
		Replicas   int            `json:"replicas"`
		Config     map[string]any `json:"config"`
	} `json:"spec"`
}

type cnpgCluster struct {
	crdHeader
	Spec struct {
		Instances             int    `json:"instances"`
		ImageName             string `json:"imageName"`
		PrimaryUpdateStrategy string `json:"primaryUpdateStrategy"`
		PostgreSQL            struct {
			Parameters  map[string]string `json:"parameters"`
			Synchronous *struct {
				Method         string `json:"method"`
				Number         int    `json:"number"`
				DataDurability string `json:"dataDurability"`
			} `json:"synchronous"`
		} `json:"postgresql"`
		Bootstrap struct {
			InitDB struct {
				Database string `json:"database"`
				Owner    string `json:"owner"`
			} `json:"initdb"`
		} `json:"bootstrap"`
		Managed *struct {
			Roles []struct {
				Name           string   `json:"name"`
				Ensure         string   `json:"ensure"`
				Login          bool     `json:"login"`
				Inherit        bool     `json:"inherit"`
				InRoles        []string `json:"inRoles"`
				PasswordSecret struct {
					Name string `json:"name"`
				} `json:"passwordSecret"`
			} `json:"roles"`
		} `json:"managed,omitempty"`
		Storage struct {
			Size string `json:"size"`
		} `json:"storage"`
		Resources corev1.ResourceRequirements `json:"resources"`
		Affinity  struct {
			EnablePodAntiAffinity *bool  `json:"enablePodAntiAffinity,omitempty"`
			TopologyKey           string `json:"topologyKey,omitempty"`
			PodAntiAffinityType   string `json:"podAntiAffinityType,omitempty"`
		} `json:"affinity"`
		Monitoring struct {
			EnablePodMonitor bool `json:"enablePodMonitor"`
		} `json:"monitoring"`
	} `json:"spec"`
}

func TestKafka(t *testing.T) {
	for _, dir := range kustomizations {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			objs := build(t, dir)
			kafkas := all[strimziKafka](objs)
			if len(kafkas) != 1 {
				t.Fatalf("%d Kafka resources, want 1", len(kafkas))
			}
			k := kafkas[0]
			if k.Metadata.Annotations["strimzi.io/kraft"] != "enabled" || k.Metadata.Annotations["strimzi.io/node-pools"] != "enabled" {
				t.Errorf("Kafka must run in KRaft mode with node pools: annotations %v", k.Metadata.Annotations)
			}
			cfg := k.Spec.Kafka.Config
			for key, want := range map[string]string{
				"min.insync.replicas":              "2",
				"unclean.leader.election.enable":   "false",
				"default.replication.factor":       "3",
				"offsets.topic.replication.factor": "3",
			} {
				if got := fmt.Sprint(cfg[key]); got != want {
					t.Errorf("Kafka config %s = %s, want %s", key, got, want)
				}
			}
			brokers, controllers := 0, 0
			for _, p := range all[strimziNodePool](objs) {
				if p.Metadata.Labels["strimzi.io/cluster"] != k.Metadata.Name {
					t.Errorf("node pool %s belongs to %q, not %q", p.Metadata.Name, p.Metadata.Labels["strimzi.io/cluster"], k.Metadata.Name)
				}
				if slices.Contains(p.Spec.Roles, "broker") {
					brokers += p.Spec.Replicas
				}
				if slices.Contains(p.Spec.Roles, "controller") {
					controllers += p.Spec.Replicas
				}
			}
			if brokers != 3 || controllers < 3 || controllers%2 == 0 {
				t.Errorf("%d brokers and %d controllers, want 3 brokers and an odd quorum of at least 3", brokers, controllers)
			}
			topics := map[string]bool{}
			for _, tp := range all[strimziTopic](objs) {
				topics[tp.Spec.TopicName] = true
				if tp.Metadata.Labels["strimzi.io/cluster"] != k.Metadata.Name {
					t.Errorf("topic %s belongs to %q", tp.Spec.TopicName, tp.Metadata.Labels["strimzi.io/cluster"])
				}
				if tp.Spec.Replicas != 3 || fmt.Sprint(tp.Spec.Config["min.insync.replicas"]) != "2" ||
					fmt.Sprint(tp.Spec.Config["unclean.leader.election.enable"]) != "false" {
					t.Errorf("topic %s: replicas %d config %v, want 3, min.insync.replicas=2, unclean election off", tp.Spec.TopicName, tp.Spec.Replicas, tp.Spec.Config)
				}
			}
			for _, want := range []string{"flash-sale-orders", "flash-sale-orders.dlq"} {
				if !topics[want] {
					t.Errorf("no KafkaTopic for %s", want)
				}
			}
		})
	}
}

func TestPostgres(t *testing.T) {
	for _, dir := range kustomizations {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			objs := build(t, dir)
			cs := all[cnpgCluster](objs)
			if len(cs) != 1 {
				t.Fatalf("%d CloudNativePG clusters, want 1", len(cs))
			}
			c := cs[0]
			if c.Spec.Instances != 3 {
				t.Errorf("instances %d, want 3", c.Spec.Instances)
			}
			s := c.Spec.PostgreSQL.Synchronous
			if s == nil || s.Number < 1 || (s.Method != "any" && s.Method != "first") || s.DataDurability != "required" {
				t.Errorf("synchronous replication %+v, want method any|first, number >= 1, dataDurability required", s)
			}
			if c.Spec.Bootstrap.InitDB.Database != "flashsale" {
				t.Errorf("database %q, want flashsale", c.Spec.Bootstrap.InitDB.Database)
			}
		})
	}
}
