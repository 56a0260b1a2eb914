package manifests

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestRunbookMatchesManifests checks the runbook's commands against the
// manifests: every image it names (build, push, kubectl run) is one the prod
// overlay deploys, with the overlay's tag, and every pod it starts with
// `kubectl run` carries a label the Redis NetworkPolicy admits (else the pod
// cannot reach Redis where policies are enforced).
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
	runs := 0
	label := regexp.MustCompile(`--labels=app\.kubernetes\.io/name=([a-z-]+)`)
	kubectlRun := regexp.MustCompile(`kubectl\s+(-n\s+\S+\s+)?run\s`)
	for _, cmd := range shellCommands(runbook) {
		if !kubectlRun.MatchString(cmd) {
			continue
		}
		runs++
		m := label.FindStringSubmatch(cmd)
		if m == nil || !slices.Contains(admitted, m[1]) {
			t.Errorf("the runbook's pod %q has no label the Redis NetworkPolicy admits (%v)", firstLine(cmd), admitted)
		}
	}
	if runs < 2 {
		t.Fatalf("found %d kubectl run commands in the runbook", runs)
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
