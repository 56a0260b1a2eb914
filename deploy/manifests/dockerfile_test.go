package manifests

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// makeRecipe returns the shell lines of target's recipe in the Makefile, with $(GO) replaced by go.
func makeRecipe(t *testing.T, target string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	in := false
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, target+":"):
			in = true
		case in && strings.HasPrefix(line, "\t"):
			cmd := strings.TrimSpace(strings.NewReplacer("$(GO)", "go", "${GO}", "go").Replace(line))
			out = append(out, strings.TrimLeft(cmd, "@-"))
		case in:
			return out
		}
	}
	if !in {
		t.Fatalf("Makefile has no target %q", target)
	}
	return out
}

// dockerfileRuns returns the commands of every RUN instruction in the build stage of the
// Dockerfile, continuation lines joined and --mount style flags removed, split on &&.
func dockerfileRuns(t *testing.T) (stages []string, runs []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy/Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var logical []string
	cur := ""
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(strings.TrimSpace(line), "#") && cur == "" {
			continue
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur += s + " "
			continue
		}
		logical = append(logical, cur+line)
		cur = ""
	}
	flag := regexp.MustCompile(`^--[a-z-]+=\S+$`)
	for _, l := range logical {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			stages = append(stages, strings.Join(f[1:], " "))
		case "RUN":
			f = f[1:]
			for len(f) > 0 && flag.MatchString(f[0]) {
				f = f[1:]
			}
			for _, c := range strings.Split(strings.Join(f, " "), "&&") {
				runs = append(runs, strings.Join(strings.Fields(c), " "))
			}
		}
	}
	return stages, runs
}

// TestDockerfileBuildsLikeMake checks that the image builder runs the same commands as
// `make build`, so the images hold the binaries developers build and test.
func TestDockerfileBuildsLikeMake(t *testing.T) {
	recipe := makeRecipe(t, "build")
	if len(recipe) == 0 {
		t.Fatal("empty build recipe")
	}
	stages, runs := dockerfileRuns(t)
	sawGoBuild := false
	for _, cmd := range recipe {
		cmd = strings.Join(strings.Fields(cmd), " ")
		if strings.Contains(cmd, "go build") {
			sawGoBuild = true
		}
		if !slices.Contains(runs, cmd) {
			t.Errorf("Makefile build runs %q; the Dockerfile does not (its RUN commands: %q)", cmd, runs)
		}
	}
	if !sawGoBuild {
		t.Errorf("the Makefile's build target has no go build: %q", recipe)
	}
	for _, r := range runs {
		if strings.Contains(r, "go build") && !slices.Contains(recipe, r) {
			t.Errorf("the Dockerfile runs %q, which make build does not", r)
		}
	}

	if !strings.HasPrefix(stages[0], "golang:1.26") {
		t.Errorf("builder stage %q, want golang:1.26 (the module's Go)", stages[0])
	}
	want := map[string]bool{"gateway": false, "writer": false, "flashctl": false, "bench": false}
	for _, s := range stages[1:] {
		f := strings.Fields(s)
		if len(f) != 3 || !strings.EqualFold(f[1], "AS") {
			t.Errorf("stage %q is not named", s)
			continue
		}
		if !strings.HasPrefix(f[0], "gcr.io/distroless/static") || !strings.HasSuffix(f[0], ":nonroot") {
			t.Errorf("stage %s runs on %s, want distroless/static :nonroot", f[2], f[0])
		}
		want[f[2]] = true
	}
	for name, ok := range want {
		if !ok {
			t.Errorf("no final stage for %s", name)
		}
	}
}
