package manifests

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
)

// TestRunbookMatchesManifests checks the runbook's commands against the
// manifests: every image it names (build, push) is one the prod overlay
// deploys, with the overlay's tag, and every flashctl command runs in the ops
// pod, whose label the Redis NetworkPolicy admits (else the pod cannot reach
// Redis where policies are enforced).
func TestRunbookMatchesManifests(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, runbookFile))
	if err != nil {
		t.Fatal(err)
	}
	runbook := string(b)
	var overlay struct {
		Images []struct {
			Name   string `yaml:"name"`
			NewTag string `yaml:"newTag"`
		} `yaml:"images"`
	}
	ob, err := os.ReadFile(filepath.Join(repoRoot, "deploy/k8s/overlays/prod/kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(ob, &overlay); err != nil {
		t.Fatal(err)
	}
	tags := map[string]string{}
	for _, im := range overlay.Images {
		tags[im.Name] = im.NewTag
	}
	images := regexp.MustCompile(`flashsale/([a-z$]+):([0-9A-Za-z.]+)`).FindAllStringSubmatch(runbook, -1)
	if len(images) < 4 {
		t.Fatalf("the runbook names %d images", len(images))
	}
	for _, m := range images {
		name := "flashsale/" + m[1]
		if m[1] == "$t" || m[1] == "bench" {
			// The build loop, and bench (not deployed by the overlay): the release tag
			// is the same for every image.
			name = "flashsale/gateway"
		}
		if tag, ok := tags[name]; !ok || tag != m[2] {
			t.Errorf("the runbook names %s; the prod overlay deploys %s:%s", m[0], name, tags[name])
		}
	}
	for _, need := range []string{"docker push", "kustomize edit set image"} {
		if !strings.Contains(runbook, need) {
			t.Errorf("the runbook lacks the step %q", need)
		}
	}

	var np struct {
		Spec struct {
			Ingress []struct {
				From []struct {
					PodSelector struct {
						MatchExpressions []struct {
							Key    string   `yaml:"key"`
							Values []string `yaml:"values"`
						} `yaml:"matchExpressions"`
					} `yaml:"podSelector"`
				} `yaml:"from"`
			} `yaml:"ingress"`
		} `yaml:"spec"`
	}
	nb, err := os.ReadFile(filepath.Join(repoRoot, "deploy/k8s/base/networkpolicy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.NewDecoder(strings.NewReader(string(nb))).Decode(&np); err != nil {
		t.Fatal(err)
	}
	var admitted []string
	for _, in := range np.Spec.Ingress {
		for _, f := range in.From {
			for _, e := range f.PodSelector.MatchExpressions {
				if e.Key == "app.kubernetes.io/name" {
					admitted = append(admitted, e.Values...)
				}
			}
		}
	}
	// Every flashctl command runs in the ops pod (kubectl exec deploy/NAME): a
	// Deployment of the prod build, running flashctl, whose pods carry a label
	// the Redis NetworkPolicy admits. A pod made with `kubectl run` would lack
	// the CAs, users and password files, so the runbook starts none of flashctl.
	objs := build(t, "deploy/k8s/overlays/prod")
	execs := 0
	target := regexp.MustCompile(`kubectl\s+(-n\s+\S+\s+)?exec\s+(-\S+\s+)*deploy/([a-z-]+)\s+--\s+(\S+)`)
	kubectlRun := regexp.MustCompile(`kubectl\s+(-n\s+\S+\s+)?run\s`)
	for _, cmd := range shellCommands(runbook) {
		if kubectlRun.MatchString(cmd) && strings.Contains(cmd, "flashctl") {
			t.Errorf("the runbook starts flashctl with kubectl run (%q): such a pod lacks the ops settings; exec into deploy/flashsale-ops", firstLine(cmd))
		}
		m := target.FindStringSubmatch(cmd)
		if m == nil {
			continue
		}
		execs++
		d := find[appsv1.Deployment](objs, m[3])
		if d == nil {
			t.Errorf("the runbook execs into deploy/%s, which the prod overlay does not deploy", m[3])
			continue
		}
		if name := d.Spec.Template.Labels["app.kubernetes.io/name"]; !slices.Contains(admitted, name) {
			t.Errorf("deploy/%s's pods are %q, which the Redis NetworkPolicy does not admit (%v)", m[3], name, admitted)
		}
		if m[4] == "flashctl" && !strings.Contains(container(t, d.Spec.Template.Spec, "flashctl").Image, "flashsale/flashctl") {
			t.Errorf("deploy/%s runs no flashctl image", m[3])
		}
	}
	if execs < 1 || !strings.Contains(runbook, `kubectl -n $NS exec -i deploy/flashsale-ops -- flashctl "$@"`) {
		t.Fatalf("the runbook's ops shorthand does not exec into deploy/flashsale-ops (%d kubectl exec into a Deployment)", execs)
	}
}

// shellCommands joins the runbook's lines continued with a backslash.
func shellCommands(doc string) []string {
	var out []string
	var cur strings.Builder
	for line := range strings.Lines(doc) {
		line = strings.TrimRight(line, "\n")
		if c, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(c)
			continue
		}
		cur.WriteString(line)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

func firstLine(s string) string {
	if len(s) > 80 {
		return s[:80]
	}
	return s
}
