package monitoring

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kfed-io/kfed/test/framework"
)

// The files under test, relative to the repository's root.
const (
	cataloguePath = "docs/metrics.md"
	dashboardPath = "deploy/chart/kfed/files/dashboard.json"
	alertsPath    = "deploy/chart/kfed/files/alerts.yaml"
	alertTests    = "test/monitoring/testdata/alerts_test.yaml"
)

// tools returns the folder of promtool and its helpers (metricnames,
// grafanadashboard), as hack/promtool.sh builds them. A test that needs them
// fails when they are missing: `make test` and CI build them first.
func tools(t *testing.T) string {
	t.Helper()
	path := os.Getenv("KFED_PROMTOOL")
	if path == "" {
		out, err := exec.Command(filepath.Join(framework.RepoRoot(t), "hack/promtool.sh"), "--print").Output()
		if err != nil {
			t.Fatal("promtool is not built: run hack/promtool.sh (make test does), or set KFED_PROMTOOL")
		}
		path = strings.TrimSpace(string(out))
	}
	return filepath.Dir(path)
}

// entry is one metric of the catalogue.
type entry struct {
	name, typ string
	labels    []string
}

var catalogueRow = regexp.MustCompile("^\\| `([a-zA-Z_:][a-zA-Z0-9_:]*)` \\| ([a-z]+) \\|([^|]*)\\|")

// catalogue reads the metric tables of docs/metrics.md.
func catalogue(t *testing.T) map[string]entry {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(framework.RepoRoot(t), cataloguePath))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]entry{}
	for line := range strings.SplitSeq(string(raw), "\n") {
		m := catalogueRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		e := entry{name: m[1], typ: m[2], labels: []string{}}
		for _, l := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(m[3], -1) {
			e.labels = append(e.labels, l[1])
		}
		slices.Sort(e.labels)
		if _, dup := out[e.name]; dup {
			t.Errorf("%s lists %s twice", cataloguePath, e.name)
		}
		out[e.name] = e
	}
	if len(out) < 20 {
		t.Fatalf("%s: found only %d metrics in its tables", cataloguePath, len(out))
	}
	return out
}

// dashboard is the part of Grafana's dashboard model these tests read.
type dashboard struct {
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name, Type, Query string
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type, UID string
	} `json:"datasource"`
	GridPos struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(framework.RepoRoot(t), dashboardPath))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	return d
}

// allPanels flattens rows' nested panels.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// grafanaVars stands in for Grafana's interval variables, so that Prometheus's
// parser reads a query as Grafana sends it.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// dashboardExprs are the PromQL queries of every panel, by panel title.
func dashboardExprs(t *testing.T) map[string]string {
	out := map[string]string{}
	for _, p := range allPanels(readDashboard(t).Panels) {
		for _, tg := range p.Targets {
			out[fmt.Sprintf("panel %q query %s", p.Title, tg.RefID)] = grafanaVars.Replace(tg.Expr)
		}
	}
	return out
}

// alertExprs are the expressions of every rule, by alert name.
func alertExprs(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(framework.RepoRoot(t), alertsPath))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert, Record, Expr string
			}
		}
	}
	if err := yaml.UnmarshalStrict(raw, &file); err != nil {
		// Strictness is promtool's job; read what the rules say.
		if err := yaml.Unmarshal(raw, &file); err != nil {
			t.Fatalf("%s: %v", alertsPath, err)
		}
	}
	out := map[string]string{}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			out["alert "+r.Alert+r.Record] = r.Expr
		}
	}
	return out
}

// selectedMetrics parses each expression with Prometheus's parser (the
// metricnames helper) and returns the metric names each selects.
func selectedMetrics(t *testing.T, exprs map[string]string) map[string][]string {
	t.Helper()
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range exprs {
			if !yield(k) {
				return
			}
		}
	})
	in := make([]string, len(keys))
	for i, k := range keys {
		in[i] = exprs[k]
	}
	body, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(tools(t), "metricnames"))
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("metricnames: %v\n%s", err, stderr.String())
	}
	var results []struct {
		Metrics []string
		Error   string
	}
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(keys) {
		t.Fatalf("metricnames answered %d results for %d expressions (%v)", len(results), len(keys), err)
	}
	names := map[string][]string{}
	for i, r := range results {
		if r.Error != "" {
			t.Errorf("%s does not parse as PromQL: %s\n%s", keys[i], r.Error, in[i])
			continue
		}
		if len(r.Metrics) == 0 {
			t.Errorf("%s selects no metric: %s", keys[i], in[i])
		}
		names[keys[i]] = r.Metrics
	}
	return names
}

func TestAlertsParseAndFire(t *testing.T) {
	promtool := filepath.Join(tools(t), "promtool")
	root := framework.RepoRoot(t)
	for _, args := range [][]string{
		{"check", "rules", alertsPath},
		{"test", "rules", alertTests},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

func TestEveryAlertHasSeverityTextAndARunbook(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(framework.RepoRoot(t), alertsPath))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(framework.RepoRoot(t), cataloguePath))
	if err != nil {
		t.Fatal(err)
	}
	tested, err := os.ReadFile(filepath.Join(framework.RepoRoot(t), alertTests))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert       string
				Labels      map[string]string
				Annotations map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			n++
			t.Run(r.Alert, func(t *testing.T) {
				if s := r.Labels["severity"]; s != "critical" && s != "warning" {
					t.Errorf("severity %q, want critical or warning", s)
				}
				for _, a := range []string{"summary", "description", "runbook_url"} {
					if r.Annotations[a] == "" {
						t.Errorf("no %s", a)
					}
				}
				anchor := "#" + strings.ToLower(r.Alert)
				if !strings.HasSuffix(r.Annotations["runbook_url"], "docs/metrics.md"+anchor) {
					t.Errorf("runbook_url %q does not point at docs/metrics.md%s", r.Annotations["runbook_url"], anchor)
				}
				if !strings.Contains(string(doc), "\n### "+r.Alert+"\n") {
					t.Errorf("%s has no runbook section ### %s", cataloguePath, r.Alert)
				}
				if !strings.Contains(string(tested), "alertname: "+r.Alert+"\n") {
					t.Errorf("%s never evaluates %s", alertTests, r.Alert)
				}
			})
		}
	}
	if n < 10 {
		t.Errorf("%s has %d alerts", alertsPath, n)
	}
}

func TestDashboardConformsToGrafanasDashboardModel(t *testing.T) {
	cmd := exec.Command(filepath.Join(tools(t), "grafanadashboard"), filepath.Join(framework.RepoRoot(t), dashboardPath))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("grafanadashboard %s: %v\n%s", dashboardPath, err, out)
	}

	d := readDashboard(t)
	if d.UID == "" || len(d.UID) > 40 {
		t.Errorf("uid %q: Grafana wants 1 to 40 characters", d.UID)
	}
	var dsVar bool
	for _, v := range d.Templating.List {
		dsVar = dsVar || (v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus")
	}
	if !dsVar {
		t.Errorf("no Prometheus data-source variable named datasource: the dashboard would be tied to one data source")
	}
	ids := map[int]string{}
	type cell struct{ x, y int }
	taken, overlaps := map[cell]string{}, map[string]bool{}
	for _, p := range allPanels(d.Panels) {
		if other, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", p.Title, other, p.ID)
		}
		ids[p.ID] = p.Title
		g := p.GridPos
		if g.W < 1 || g.H < 1 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v is outside Grafana's 24 columns", p.Title, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := taken[cell{x, y}]; ok && !overlaps[other+"|"+p.Title] {
					t.Errorf("panels %q and %q overlap at column %d, row %d", other, p.Title, x, y)
					overlaps[other+"|"+p.Title] = true
				}
				taken[cell{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %+v, want the ${datasource} variable", p.Title, p.Datasource)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: refId %q missing or repeated", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
	}
	// Every query parses with Prometheus's parser (what it selects is
	// checked against a scrape in TestCatalogueDashboardAndAlertsMatchTheRunningBinaries).
	selectedMetrics(t, dashboardExprs(t))
}
