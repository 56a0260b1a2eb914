package manifests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"flashsale/deploy/secure"
)

// repoRoot is the repository root relative to this package's directory, where go test runs.
const repoRoot = "../.."

// kustomizations are the directories that must build; the base is built too so that an error is
// reported where it is made.
var kustomizations = []string{"deploy/k8s/base", "deploy/k8s/overlays/dev", "deploy/k8s/overlays/prod"}

// builtinKinds maps apiVersion/kind to a new value of its k8s.io/api type. An object of a kind
// that is in neither this table nor customKinds fails the test, so a new kind is a conscious
// addition here.
var builtinKinds = map[string]func() any{
	"v1/ConfigMap":                           func() any { return new(corev1.ConfigMap) },
	"v1/Secret":                              func() any { return new(corev1.Secret) },
	"v1/Service":                             func() any { return new(corev1.Service) },
	"v1/ServiceAccount":                      func() any { return new(corev1.ServiceAccount) },
	"v1/PersistentVolumeClaim":               func() any { return new(corev1.PersistentVolumeClaim) },
	"v1/Namespace":                           func() any { return new(corev1.Namespace) },
	"apps/v1/Deployment":                     func() any { return new(appsv1.Deployment) },
	"apps/v1/StatefulSet":                    func() any { return new(appsv1.StatefulSet) },
	"batch/v1/Job":                           func() any { return new(batchv1.Job) },
	"policy/v1/PodDisruptionBudget":          func() any { return new(policyv1.PodDisruptionBudget) },
	"autoscaling/v2/HorizontalPodAutoscaler": func() any { return new(autoscalingv2.HorizontalPodAutoscaler) },
	"networking.k8s.io/v1/NetworkPolicy":     func() any { return new(networkingv1.NetworkPolicy) },
}

// customKinds maps the operators' custom resources to the hand-written structs in crd_test.go.
var customKinds = map[string]func() any{
	"kafka.strimzi.io/v1beta2/Kafka":         func() any { return new(strimziKafka) },
	"kafka.strimzi.io/v1beta2/KafkaNodePool": func() any { return new(strimziNodePool) },
	"kafka.strimzi.io/v1beta2/KafkaTopic":    func() any { return new(strimziTopic) },
	"kafka.strimzi.io/v1beta2/KafkaUser":     func() any { return new(secure.KafkaUser) },
	"postgresql.cnpg.io/v1/Cluster":          func() any { return new(cnpgCluster) },
}

// object is one decoded resource of a kustomize build.
type object struct {
	gvk  string // apiVersion/kind
	name string
	obj  any // pointer to the typed value
}

// build runs kustomize on dir (relative to the repository root) and decodes every resource
// strictly into its type.
func build(t *testing.T, dir string) []object {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(repoRoot, dir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []object
	for _, r := range rm.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatalf("%s: %s: %v", dir, r.CurId(), err)
		}
		j, err := yaml.YAMLToJSON(y)
		if err != nil {
			t.Fatalf("%s: %s: yaml to json: %v", dir, r.CurId(), err)
		}
		gvk := r.GetApiVersion() + "/" + r.GetKind()
		newT, ok := builtinKinds[gvk]
		if !ok {
			newT, ok = customKinds[gvk]
		}
		if !ok {
			t.Errorf("%s: %s %s: no type known for %s; add it to builtinKinds or customKinds", dir, gvk, r.GetName(), gvk)
			continue
		}
		v := newT()
		if err := decodeStrict(j, v); err != nil {
			t.Errorf("%s: %s %s: %v", dir, gvk, r.GetName(), err)
			continue
		}
		out = append(out, object{gvk: gvk, name: r.GetName(), obj: v})
	}
	return out
}

// decodeStrict decodes JSON into v, failing on a field v's type does not have. encoding/json
// matches names case-insensitively, so the value is encoded again and every field of the input
// must come back with the same value: that also catches "ReadinessProbe" for "readinessProbe"
// and values a type silently drops.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("strict decode: %w", err)
	}
	back, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding again: %w", err)
	}
	var in, out any
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	if err := json.Unmarshal(back, &out); err != nil {
		return err
	}
	if p := lost(in, out, ""); p != "" {
		return fmt.Errorf("field %s does not survive decoding (misspelt, wrong case or wrong type)", p)
	}
	return nil
}

// lost returns the path of the first value of in that is missing from or different in out, or "".
func lost(in, out any, path string) string {
	switch a := in.(type) {
	case map[string]any:
		b, ok := out.(map[string]any)
		if !ok {
			return orRoot(path)
		}
		keys := make([]string, 0, len(a))
		for k := range a {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			bv, ok := b[k]
			if !ok {
				if isEmpty(a[k]) {
					continue // an empty value left out by omitempty means the same
				}
				return path + "." + k
			}
			if p := lost(a[k], bv, path+"."+k); p != "" {
				return p
			}
		}
		return ""
	case []any:
		b, ok := out.([]any)
		if !ok || len(a) != len(b) {
			return orRoot(path)
		}
		for i := range a {
			if p := lost(a[i], b[i], fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
		return ""
	default:
		if !reflect.DeepEqual(in, out) {
			return fmt.Sprintf("%s (%v became %v)", orRoot(path), in, out)
		}
		return ""
	}
}

func orRoot(p string) string {
	if p == "" {
		return "."
	}
	return p
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	case string:
		return x == ""
	}
	return false
}

// find returns the object of type T named name, or nil.
func find[T any](objs []object, name string) *T {
	for _, o := range objs {
		if v, ok := o.obj.(*T); ok && o.name == name {
			return v
		}
	}
	return nil
}

// all returns every object of type T.
func all[T any](objs []object) []*T {
	var out []*T
	for _, o := range objs {
		if v, ok := o.obj.(*T); ok {
			out = append(out, v)
		}
	}
	return out
}

// mustFind is find that fails the test when the object is missing.
func mustFind[T any](t *testing.T, objs []object, name string) *T {
	t.Helper()
	v := find[T](objs, name)
	if v == nil {
		var zero T
		t.Fatalf("no %T named %q in the build", zero, name)
	}
	return v
}

// byPrefix finds the object of type T whose name is prefix or prefix plus kustomize's hash suffix.
func byPrefix[T any](objs []object, prefix string) (*T, string) {
	for _, o := range objs {
		if v, ok := o.obj.(*T); ok && (o.name == prefix || strings.HasPrefix(o.name, prefix+"-")) {
			return v, o.name
		}
	}
	return nil, ""
}

func TestKustomizeBuildsDecodeStrictly(t *testing.T) {
	for _, dir := range kustomizations {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			objs := build(t, dir)
			if len(objs) < 20 {
				t.Fatalf("%s built only %d objects", dir, len(objs))
			}
			seen := map[string]bool{}
			for _, o := range objs {
				id := o.gvk + "/" + o.name
				if seen[id] {
					t.Errorf("duplicate object %s", id)
				}
				seen[id] = true
			}
		})
	}
}

func TestStrictDecodeCatchesMistakes(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field": "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {externalTrafficPolicyy: Local}\n",
		"wrong case":    "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ExternalTrafficPolicy: Local}\n",
		"wrong type":    "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: http}]}\n",
	} {
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if err := decodeStrict(j, new(corev1.Service)); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

func TestGateway(t *testing.T) {
	for _, dir := range kustomizations {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			objs := build(t, dir)
			d := mustFind[appsv1.Deployment](t, objs, "flashsale-gateway")
			spec := d.Spec.Template.Spec
			c := container(t, spec, "gateway")
			admin := port(t, c, "admin")
			if admin != 9102 || port(t, c, "http") != 8080 {
				t.Errorf("gateway ports: admin %d http %d, want 9102 and 8080", admin, port(t, c, "http"))
			}
			checkProbe(t, "readiness", c.ReadinessProbe, "/readyz")
			checkProbe(t, "liveness", c.LivenessProbe, "/healthz")
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("gateway needs cpu and memory requests and a memory limit: %+v", c.Resources)
			}
			if spec.Affinity == nil || spec.Affinity.PodAntiAffinity == nil ||
				len(spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)+len(spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
				t.Error("gateway has no pod anti-affinity")
			}
			if env(c, "FLASHSALE_ADMIN") == nil || env(c, "FLASHSALE_REDIS") == nil || env(c, "KAFKA_BROKERS") == nil {
				t.Error("gateway must get FLASHSALE_ADMIN, FLASHSALE_REDIS and KAFKA_BROKERS")
			}
			if cm, _ := byPrefix[corev1.ConfigMap](objs, "flashsale-config"); cm == nil || !strings.HasPrefix(cm.Data["FLASHSALE_GATEWAY_ADMIN"], ":") {
				t.Error("the admin port must listen on all interfaces in a pod (FLASHSALE_GATEWAY_ADMIN=:9102) or the kubelet cannot probe it")
			}

			svc := mustFind[corev1.Service](t, objs, "flashsale-gateway")
			if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal || svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
				t.Errorf("gateway Service: type %s externalTrafficPolicy %s, want LoadBalancer and Local", svc.Spec.Type, svc.Spec.ExternalTrafficPolicy)
			}
			pdb := mustFind[policyv1.PodDisruptionBudget](t, objs, "flashsale-gateway")
			if !selects(pdb.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
				t.Error("gateway PDB does not select the gateway pods")
			}
			hpa := mustFind[autoscalingv2.HorizontalPodAutoscaler](t, objs, "flashsale-gateway")
			if hpa.Spec.ScaleTargetRef.Kind != "Deployment" || hpa.Spec.ScaleTargetRef.Name != d.Name || hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas > hpa.Spec.MaxReplicas {
				t.Errorf("gateway HPA: %+v", hpa.Spec)
			}
		})
	}
}

func TestWriterAndJobs(t *testing.T) {
	for _, dir := range kustomizations {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			objs := build(t, dir)
			w := mustFind[appsv1.Deployment](t, objs, "flashsale-writer")
			if w.Spec.Replicas == nil || *w.Spec.Replicas < 2 {
				t.Errorf("writer replicas %v, want at least 2", w.Spec.Replicas)
			}
			c := container(t, w.Spec.Template.Spec, "writer")
			checkProbe(t, "writer readiness", c.ReadinessProbe, "/readyz")
			checkProbe(t, "writer liveness", c.LivenessProbe, "/healthz")
			if port(t, c, "admin") != 9103 {
				t.Errorf("writer admin port %d, want 9103", port(t, c, "admin"))
			}
			for _, name := range []string{"FLASHSALE_ADMIN", "FLASHSALE_DATABASE_URL", "FLASHSALE_REDIS", "KAFKA_BROKERS", "FLASHSALE_TOPIC", "FLASHSALE_DLQ_TOPIC", "FLASHSALE_GROUP"} {
				if env(c, name) == nil {
					t.Errorf("writer has no %s", name)
				}
			}

			job := mustFind[batchv1.Job](t, objs, "flashsale-preload")
			jc := container(t, job.Spec.Template.Spec, "flashctl")
			if !strings.Contains(jc.Image, "flashctl") || len(jc.Args) == 0 || jc.Args[0] != "preload" {
				t.Errorf("preload job runs %s %v, want flashctl preload", jc.Image, jc.Args)
			}
			if job.Spec.Suspend == nil || !*job.Spec.Suspend {
				t.Error("the preload job must be created suspended (it is started on sale day)")
			}

			// The ops pod: flashctl toolbox, Ready only while its settings reach
			// every store, with the writers' group and topic for reconcile.
			ops := mustFind[appsv1.Deployment](t, objs, "flashsale-ops")
			if ops.Spec.Replicas == nil || *ops.Spec.Replicas < 1 {
				t.Errorf("ops pod replicas %v, want 1 (it must be there at 3 a.m.)", ops.Spec.Replicas)
			}
			oc := container(t, ops.Spec.Template.Spec, "flashctl")
			if !strings.Contains(oc.Image, "flashctl") || !slices.Equal(oc.Args, []string{"toolbox"}) {
				t.Errorf("ops pod runs %s %v, want flashctl toolbox", oc.Image, oc.Args)
			}
			if p := oc.ReadinessProbe; p == nil || p.Exec == nil || !slices.Equal(p.Exec.Command, []string{"flashctl", "toolbox", "--once"}) ||
				p.TimeoutSeconds < 11 {
				t.Errorf("ops pod readiness %+v, want exec flashctl toolbox --once with a timeout above its 10 s check", p)
			}
			for _, name := range []string{"FLASHSALE_REDIS", "FLASHSALE_DATABASE_URL", "KAFKA_BROKERS", "FLASHSALE_TOPIC", "FLASHSALE_GROUP", "FLASHSALE_KAFKA_USER"} {
				if env(oc, name) == nil {
					t.Errorf("ops pod has no %s", name)
				}
			}
		})
	}
}

func TestPodsHardened(t *testing.T) {
	for _, dir := range kustomizations {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			objs := build(t, dir)
			for _, o := range objs {
				spec := podSpec(o.obj)
				if spec == nil {
					continue
				}
				if spec.SecurityContext == nil || spec.SecurityContext.RunAsNonRoot == nil || !*spec.SecurityContext.RunAsNonRoot {
					t.Errorf("%s %s: pod must set runAsNonRoot", o.gvk, o.name)
				}
				for _, c := range spec.Containers {
					sc := c.SecurityContext
					if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
						sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
						sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
						t.Errorf("%s %s: container %s must drop ALL capabilities, forbid privilege escalation and have a read-only root", o.gvk, o.name, c.Name)
					}
					if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
						t.Errorf("%s %s: container %s needs a memory request and limit", o.gvk, o.name, c.Name)
					}
					if dir == "deploy/k8s/overlays/prod" && strings.HasPrefix(c.Image, "flashsale/") && (strings.HasSuffix(c.Image, ":latest") || !strings.Contains(c.Image, ":")) {
						t.Errorf("%s %s: production image %s must be pinned", o.gvk, o.name, c.Image)
					}
				}
			}
		})
	}
}

// TestReferences checks that every ConfigMap, Secret, Service selector, named target port and
// scale target referenced in a build exists in it, so a rename is caught before a pod is stuck in
// CreateContainerConfigError.
func TestReferences(t *testing.T) {
	for _, dir := range kustomizations {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			objs := build(t, dir)
			configMaps := map[string]map[string]string{}
			for _, cm := range all[corev1.ConfigMap](objs) {
				configMaps[cm.Name] = cm.Data
			}
			secrets := map[string]map[string]bool{}
			for _, s := range all[corev1.Secret](objs) {
				keys := map[string]bool{}
				for k := range s.Data {
					keys[k] = true
				}
				for k := range s.StringData {
					keys[k] = true
				}
				secrets[s.Name] = keys
			}
			// CloudNativePG creates <cluster>-app with the application user's connection URI.
			for _, c := range all[cnpgCluster](objs) {
				secrets[c.Metadata.Name+"-app"] = map[string]bool{"uri": true, "password": true, "username": true, "host": true}
			}
			for _, o := range objs {
				spec := podSpec(o.obj)
				if spec == nil {
					continue
				}
				for _, v := range spec.Volumes {
					if v.ConfigMap != nil {
						data, ok := configMaps[v.ConfigMap.Name]
						if !ok {
							t.Errorf("%s: volume %s: no ConfigMap %s", o.name, v.Name, v.ConfigMap.Name)
						}
						for _, it := range v.ConfigMap.Items {
							if _, ok := data[it.Key]; !ok {
								t.Errorf("%s: volume %s: ConfigMap %s has no key %s", o.name, v.Name, v.ConfigMap.Name, it.Key)
							}
						}
					}
				}
				for _, c := range spec.Containers {
					for _, e := range c.Env {
						if e.ValueFrom == nil {
							continue
						}
						if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
							data, ok := configMaps[r.Name]
							if _, has := data[r.Key]; !ok || (!has && (r.Optional == nil || !*r.Optional)) {
								t.Errorf("%s/%s: env %s: no key %s in ConfigMap %s", o.name, c.Name, e.Name, r.Key, r.Name)
							}
						}
						if r := e.ValueFrom.SecretKeyRef; r != nil {
							keys, ok := secrets[r.Name]
							if !ok || (!keys[r.Key] && (r.Optional == nil || !*r.Optional)) {
								t.Errorf("%s/%s: env %s: no key %s in Secret %s", o.name, c.Name, e.Name, r.Key, r.Name)
							}
						}
					}
				}
			}
			for _, svc := range all[corev1.Service](objs) {
				var pods []*corev1.PodTemplateSpec
				for _, o := range objs {
					if pt := podTemplate(o.obj); pt != nil && selects(svc.Spec.Selector, pt.Labels) {
						pods = append(pods, pt)
					}
				}
				if len(pods) == 0 {
					t.Errorf("Service %s selects no pods", svc.Name)
					continue
				}
				for _, p := range svc.Spec.Ports {
					if p.TargetPort.StrVal == "" {
						continue
					}
					found := false
					for _, c := range pods[0].Spec.Containers {
						for _, cp := range c.Ports {
							found = found || cp.Name == p.TargetPort.StrVal
						}
					}
					if !found {
						t.Errorf("Service %s: target port %q is not a container port", svc.Name, p.TargetPort.StrVal)
					}
				}
			}
			for _, pdb := range all[policyv1.PodDisruptionBudget](objs) {
				n := 0
				for _, o := range objs {
					if pt := podTemplate(o.obj); pt != nil && selects(pdb.Spec.Selector.MatchLabels, pt.Labels) {
						n++
					}
				}
				if n != 1 {
					t.Errorf("PodDisruptionBudget %s selects %d workloads, want 1", pdb.Name, n)
				}
			}
			for _, hpa := range all[autoscalingv2.HorizontalPodAutoscaler](objs) {
				if find[appsv1.Deployment](objs, hpa.Spec.ScaleTargetRef.Name) == nil {
					t.Errorf("HPA %s scales missing Deployment %s", hpa.Name, hpa.Spec.ScaleTargetRef.Name)
				}
			}
		})
	}
}

// TestOverlaysCanVerifyTokens checks that each overlay gives the gateway a JWKS or an HS256 secret.
func TestOverlaysCanVerifyTokens(t *testing.T) {
	for _, dir := range kustomizations[1:] {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			objs := build(t, dir)
			cm, _ := byPrefix[corev1.ConfigMap](objs, "flashsale-config")
			sec, _ := byPrefix[corev1.Secret](objs, "flashsale-auth")
			if cm == nil || sec == nil {
				t.Fatal("flashsale-config or flashsale-auth missing")
			}
			_, hasSecret := sec.Data["FLASHSALE_JWT_SECRET"]
			if cm.Data["FLASHSALE_JWKS"] == "" && !hasSecret {
				t.Error("neither FLASHSALE_JWKS nor FLASHSALE_JWT_SECRET is configured")
			}
			if dir == "deploy/k8s/overlays/prod" && hasSecret {
				t.Error("production must verify tokens with the JWKS, not a shared secret in the manifests")
			}
		})
	}
}

func TestRedisCluster(t *testing.T) {
	for _, dir := range kustomizations {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			objs := build(t, dir)
			ss := mustFind[appsv1.StatefulSet](t, objs, "redis-cluster")
			if ss.Spec.Replicas == nil || *ss.Spec.Replicas != 6 {
				t.Errorf("redis StatefulSet replicas %v, want 6 (3 masters + 3 replicas)", ss.Spec.Replicas)
			}
			if len(ss.Spec.VolumeClaimTemplates) == 0 {
				t.Error("redis nodes need persistent volumes (nodes.conf and the append-only file)")
			}
			conf := mustFind[corev1.ConfigMap](t, objs, "redis-cluster").Data["redis.conf"]
			for _, line := range []string{"cluster-enabled yes", "maxmemory-policy noeviction", "appendonly yes"} {
				if !hasLine(conf, line) {
					t.Errorf("redis.conf lacks %q", line)
				}
			}
			job := mustFind[batchv1.Job](t, objs, "redis-cluster-create")
			script := mustFind[corev1.ConfigMap](t, objs, "redis-cluster").Data["create-cluster.sh"]
			if !strings.Contains(script, "redis-cli --cluster create") || !strings.Contains(script, "--cluster-replicas 1") {
				t.Error("cluster-create script must run redis-cli --cluster create ... --cluster-replicas 1")
			}
			if c := container(t, job.Spec.Template.Spec, "create"); !strings.HasPrefix(c.Image, "redis:7") {
				t.Errorf("cluster-create image %s", c.Image)
			}
		})
	}
}

func hasLine(text, line string) bool {
	for l := range strings.Lines(text) {
		if strings.Join(strings.Fields(l), " ") == line {
			return true
		}
	}
	return false
}

func podTemplate(obj any) *corev1.PodTemplateSpec {
	switch v := obj.(type) {
	case *appsv1.Deployment:
		return &v.Spec.Template
	case *appsv1.StatefulSet:
		return &v.Spec.Template
	case *batchv1.Job:
		return &v.Spec.Template
	}
	return nil
}

func podSpec(obj any) *corev1.PodSpec {
	if pt := podTemplate(obj); pt != nil {
		return &pt.Spec
	}
	return nil
}

func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func container(t *testing.T, spec corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range spec.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %q", name)
	return corev1.Container{}
}

func port(t *testing.T, c corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Errorf("container %s has no port %q", c.Name, name)
	return 0
}

func env(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func checkProbe(t *testing.T, what string, p *corev1.Probe, path string) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Errorf("%s probe: missing or not HTTP", what)
		return
	}
	if p.HTTPGet.Path != path || p.HTTPGet.Port.StrVal != "admin" {
		t.Errorf("%s probe: %s on port %s, want %s on the admin port", what, p.HTTPGet.Path, p.HTTPGet.Port.String(), path)
	}
}
