package manifests

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"
)

const (
	dashboardFile = "deploy/observability/grafana-dashboard.json"
	alertsFile    = "deploy/observability/alerts.yaml"
	runbookFile   = "deploy/README.md"
)

// promQLKeywords are identifiers in PromQL that are neither functions (those are followed by
// "(") nor metric names.
var promQLKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true, "atan2": true, "inf": true, "nan": true,
}

var (
	promStrings   = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promMatchers  = regexp.MustCompile(`\{[^}]*\}`)
	promRanges    = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping  = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdent     = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	promNumberish = regexp.MustCompile(`^[0-9.]`)
)

// metricNames returns the metric names a PromQL expression selects. It is a small lexer, not a
// parser: strings, label matchers, ranges and grouping clauses are removed, and what remains of
// the identifiers, less functions and keywords, are metric names.
func metricNames(expr string) []string {
	s := promStrings.ReplaceAllString(expr, `""`)
	s = promMatchers.ReplaceAllString(s, " ")
	s = promRanges.ReplaceAllString(s, " ")
	s = promGrouping.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range promIdent.FindAllStringIndex(s, -1) {
		if loc[0] > 0 && (promNumberish.MatchString(s[loc[0]-1:loc[0]]) || s[loc[0]-1] == '$') {
			continue // the exponent of 1e3, or a Grafana variable
		}
		id := s[loc[0]:loc[1]]
		rest := strings.TrimLeft(s[loc[1]:], " \t\n")
		if strings.HasPrefix(rest, "(") || promQLKeywords[strings.ToLower(id)] {
			continue
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func TestMetricNamesLexer(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum by (code) (rate(flashsale_gateway_requests_total{code=~"5..", route="x"}[$__rate_interval]))`: {"flashsale_gateway_requests_total"},
		`histogram_quantile(0.99, sum by (le) (rate(a_bucket[5m]))) > 1e3`:                                 {"a_bucket"},
		`a / on(job) group_left(x) b offset 5m and bool c`:                                                 {"a", "b", "c"},
		`absent(up)`: {"up"},
	} {
		if got := metricNames(expr); !slices.Equal(got, want) {
			t.Errorf("metricNames(%q) = %q, want %q", expr, got, want)
		}
	}
}

// checkNames reports every metric an expression names that the binaries do not export.
func checkNames(t *testing.T, where, expr string, used map[string]bool) {
	t.Helper()
	known := seriesNames()
	names := metricNames(expr)
	if len(names) == 0 {
		t.Errorf("%s: expression names no metric: %s", where, expr)
	}
	for _, n := range names {
		m, ok := known[n]
		if !ok {
			t.Errorf("%s: metric %s is not exported by the binaries (exportedMetrics in metrics_test.go)", where, n)
			continue
		}
		used[m.name] = true
	}
}

type grafanaPanel struct {
	ID          int            `json:"id"`
	Type        string         `json:"type"`
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Datasource  map[string]any `json:"datasource"`
	GridPos     struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaDashboard struct {
	UID           string         `json:"uid"`
	Title         string         `json:"title"`
	SchemaVersion int            `json:"schemaVersion"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query string `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

func TestDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatal("dashboard is not valid JSON")
	}
	var d grafanaDashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion == 0 {
		t.Errorf("dashboard needs uid, title and schemaVersion")
	}
	if !slices.ContainsFunc(d.Templating.List, func(v struct {
		Name  string `json:"name"`
		Type  string `json:"type"`
		Query string `json:"query"`
	}) bool {
		return v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus"
	}) {
		t.Error("dashboard needs a Prometheus datasource variable named datasource (portable across Grafanas)")
	}
	ids := map[int]bool{}
	used := map[string]bool{}
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel id %d used twice", p.ID)
			}
			ids[p.ID] = true
			if p.GridPos.W < 1 || p.GridPos.X+p.GridPos.W > 24 || p.GridPos.H < 1 {
				t.Errorf("panel %q: grid position %+v outside the 24-column grid", p.Title, p.GridPos)
			}
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Title == "" || p.Description == "" || len(p.Targets) == 0 || p.Datasource["uid"] != "${datasource}" {
				t.Errorf("panel %d %q needs a title, a description, queries and the ${datasource} datasource", p.ID, p.Title)
			}
			for _, tg := range p.Targets {
				checkNames(t, "panel "+p.Title, tg.Expr, used)
			}
		}
	}
	walk(d.Panels)
	// The issue asks for these views; each needs its metric on the dashboard.
	for _, m := range []string{
		"flashsale_gateway_requests_total", "flashsale_gateway_request_duration_seconds", "flashsale_gateway_soldout",
		"flashsale_writer_consumer_lag", "flashsale_writer_orders_persisted_total", "flashsale_writer_expired_total",
		"flashsale_writer_releases_total", "flashsale_gateway_voids_total", "flashsale_journal_backlog",
		"flashsale_journal_oldest_age_seconds", "flashsale_relay_errors_total", "flashsale_gateway_replica_ack_shortfalls_total",
	} {
		if !used[m] {
			t.Errorf("the dashboard shows nothing of %s", m)
		}
	}
}

// ruleFile is the Prometheus rule file format (the fields this project uses), decoded with
// unknown fields refused.
type ruleFile struct {
	Groups []struct {
		Name     string `yaml:"name"`
		Interval string `yaml:"interval,omitempty"`
		Rules    []struct {
			Alert       string            `yaml:"alert,omitempty"`
			Record      string            `yaml:"record,omitempty"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for,omitempty"`
			Labels      map[string]string `yaml:"labels,omitempty"`
			Annotations map[string]string `yaml:"annotations,omitempty"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// promTemplateFuncs stand in for the template functions Prometheus offers in annotations, so the
// annotations can be parsed.
var promTemplateFuncs = template.FuncMap{
	"humanize": fmtAny, "humanize1024": fmtAny, "humanizeDuration": fmtAny, "humanizePercentage": fmtAny,
	"humanizeTimestamp": fmtAny, "query": fmtAny, "first": fmtAny, "value": fmtAny, "label": fmtAny,
}

func fmtAny(v any) string { return "" }

func TestAlertRules(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, alertsFile))
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&rf); err != nil {
		t.Fatalf("alert rules: %v", err)
	}
	runbook, err := os.ReadFile(filepath.Join(repoRoot, runbookFile))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for line := range strings.Lines(string(runbook)) {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			anchors[strings.ToLower(strings.Trim(strings.TrimSpace(strings.TrimLeft(h, "#")), "`"))] = true
		}
	}
	used := map[string]bool{}
	alerts := map[string]bool{}
	for _, g := range rf.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q is empty or unnamed", g.Name)
		}
		for _, r := range g.Rules {
			if r.Alert == "" || strings.TrimSpace(r.Expr) == "" {
				t.Errorf("group %s: rule %q needs an alert name and an expression", g.Name, r.Alert)
				continue
			}
			if alerts[r.Alert] {
				t.Errorf("alert %s defined twice", r.Alert)
			}
			alerts[r.Alert] = true
			checkNames(t, "alert "+r.Alert, r.Expr, used)
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("alert %s: for %q: %v", r.Alert, r.For, err)
				}
			}
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("alert %s: severity %q, want critical or warning", r.Alert, s)
			}
			for _, k := range []string{"summary", "description", "runbook_url"} {
				if r.Annotations[k] == "" {
					t.Errorf("alert %s has no %s", r.Alert, k)
				}
			}
			for k, v := range r.Annotations {
				// Prometheus defines these variables before expanding an annotation.
				const defs = "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
				if _, err := template.New(k).Funcs(promTemplateFuncs).Parse(defs + v); err != nil {
					t.Errorf("alert %s: annotation %s: %v", r.Alert, k, err)
				}
			}
			want := runbookFile + "#" + strings.ToLower(r.Alert)
			if r.Annotations["runbook_url"] != want {
				t.Errorf("alert %s: runbook_url %q, want %q", r.Alert, r.Annotations["runbook_url"], want)
			}
			if !anchors[strings.ToLower(r.Alert)] {
				t.Errorf("alert %s has no section in %s", r.Alert, runbookFile)
			}
		}
	}
	// The issues' alert classes: invariant breach, 5xx rate, Redis or relay errors, consumer lag,
	// expiry backlog, and the hand-off journal (backlog growing, an entry too old, full, replica
	// shortfalls, ghosts).
	for _, a := range []string{"FlashsaleOrderFailed", "FlashsaleDeadLetters", "FlashsaleHigh5xxRate",
		"FlashsaleRedisErrors", "FlashsaleRelayErrors", "FlashsaleConsumerLag", "FlashsaleExpiryBacklog",
		"FlashsaleJournalBacklogGrowing", "FlashsaleJournalEntryOld", "FlashsaleJournalFull",
		"FlashsaleReplicaAckShortfall", "FlashsaleGhostReservations", "FlashsaleVoidGaveUp"} {
		if !alerts[a] {
			t.Errorf("no alert %s", a)
		}
	}
}
