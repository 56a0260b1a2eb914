package manifests

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// The load test (deploy/k8s/loadtest) runs N bench pods as an Indexed Job,
// pod i with -shard i/N from its completion index, every pod on one start
// time and seed, and a merge step over exactly the N result directories on
// the volume they share; both created suspended and hardened like the rest.
func TestLoadTestIndexedJob(t *testing.T) {
	objs := build(t, "deploy/k8s/loadtest")
	bench := mustFind[batchv1.Job](t, objs, "flashsale-bench")
	merge := mustFind[batchv1.Job](t, objs, "flashsale-bench-merge")
	cm := mustFind[corev1.ConfigMap](t, objs, "flashsale-loadtest")
	s := bench.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || s.Completions == nil || s.Parallelism == nil {
		t.Fatalf("bench Job: completionMode %v, completions %v, parallelism %v: want an Indexed Job", s.CompletionMode, s.Completions, s.Parallelism)
	}
	n := int(*s.Completions)
	if int(*s.Parallelism) != n || n < 2 {
		t.Errorf("bench Job: %d completions, parallelism %d: every shard must run at once", n, *s.Parallelism)
	}
	for _, j := range []*batchv1.Job{bench, merge} {
		if j.Spec.Suspend == nil || !*j.Spec.Suspend {
			t.Errorf("%s must be created suspended (it is resumed on the day)", j.Name)
		}
	}
	c := container(t, s.Template.Spec, "bench")
	args := strings.Join(c.Args, " ")
	if want := fmt.Sprintf("-shard $(SHARD)/%d", n); !strings.Contains(args, want) {
		t.Errorf("bench args %q lack %q", args, want)
	}
	for _, want := range []string{"-start-at $(BENCH_START_AT)", "-seed $(BENCH_SEED)", "-out /results/shard-$(SHARD)", "-xff", "-scenario flash-crowd"} {
		if !strings.Contains(args, want) {
			t.Errorf("bench args %q lack %q", args, want)
		}
	}
	var shard *corev1.EnvVar
	for i := range c.Env {
		if c.Env[i].Name == "SHARD" {
			shard = &c.Env[i]
		}
	}
	if shard == nil || shard.ValueFrom == nil || shard.ValueFrom.FieldRef == nil ||
		shard.ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("SHARD must come from the pod's completion index, is %+v", shard)
	}
	for _, v := range regexp.MustCompile(`\$\(([A-Z_]+)\)`).FindAllStringSubmatch(args, -1) {
		if _, ok := cm.Data[v[1]]; !ok && v[1] != "SHARD" {
			t.Errorf("bench args use $(%s), which flashsale-loadtest lacks", v[1])
		}
	}
	mc := container(t, merge.Spec.Template.Spec, "merge")
	var dirs []string
	for i := range n {
		dirs = append(dirs, fmt.Sprintf("/results/shard-%d", i))
	}
	if len(mc.Args) < n+1 || mc.Args[0] != "merge" || !slices.Equal(mc.Args[len(mc.Args)-n:], dirs) || !slices.Contains(mc.Args, "-audit") {
		t.Errorf("merge args %v: want bench merge -audit ... %v", mc.Args, dirs)
	}
	claim := func(j *batchv1.Job) string {
		for _, v := range j.Spec.Template.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				return v.PersistentVolumeClaim.ClaimName
			}
		}
		return ""
	}
	pvc := find[corev1.PersistentVolumeClaim](objs, claim(bench))
	if pvc == nil || claim(merge) != claim(bench) || !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
		t.Errorf("bench and merge must share a ReadWriteMany volume: bench %q, merge %q", claim(bench), claim(merge))
	}
	checkHardened(t, objs)
}

// checkHardened holds the load test's pods to TestPodsHardened's rules.
func checkHardened(t *testing.T, objs []object) {
	t.Helper()
	for _, o := range objs {
		spec := podSpec(o.obj)
		if spec == nil {
			continue
		}
		if spec.SecurityContext == nil || spec.SecurityContext.RunAsNonRoot == nil || !*spec.SecurityContext.RunAsNonRoot {
			t.Errorf("%s: pod must set runAsNonRoot", o.name)
		}
		for _, c := range spec.Containers {
			sc := c.SecurityContext
			if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil ||
				!*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
				t.Errorf("%s: container %s is not hardened", o.name, c.Name)
			}
			if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("%s: container %s needs a memory request and limit", o.name, c.Name)
			}
		}
	}
}

// The merge step audits, so the Redis NetworkPolicy of the deployment lets
// it in.
func TestRedisPolicyAdmitsTheMergeStep(t *testing.T) {
	objs := build(t, "deploy/k8s/base")
	np := mustFind[networkingv1.NetworkPolicy](t, objs, "redis-cluster")
	for _, in := range np.Spec.Ingress {
		for _, from := range in.From {
			if from.PodSelector == nil {
				continue
			}
			for _, e := range from.PodSelector.MatchExpressions {
				if e.Key == "app.kubernetes.io/name" && slices.Contains(e.Values, "flashsale-bench-merge") {
					return
				}
			}
		}
	}
	t.Error("redis-cluster NetworkPolicy does not admit flashsale-bench-merge")
}
