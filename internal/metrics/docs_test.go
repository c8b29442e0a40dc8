package metrics

import (
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// The dashboard and the metrics page are checked against the series the
// collector emits, so that neither can drift from the code.
const (
	dashboardFile = "../../docs/grafana-dashboard.json"
	docFile       = "../../docs/metrics.md"
)

var seriesName = regexp.MustCompile(`\bdirectord_[a-z0-9_]*[a-z0-9]`)

// emitted is every directord_ family New exposes, and for a histogram its
// _bucket, _sum and _count series, by name; the value says whether it is a
// family's own name.
func emitted(t *testing.T) map[string]bool {
	t.Helper()
	m := New(fakeStatus)
	m.ObserveCheck("HTTP_GET", "up", time.Millisecond, 0)
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := make(map[string]bool)
	for _, f := range families {
		name := f.GetName()
		if !strings.HasPrefix(name, "directord_") {
			continue
		}
		names[name] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[name+s] = false
			}
		}
	}
	if len(names) < 20 {
		t.Fatalf("only %d directord_ series names emitted: %v", len(names), slices.Sorted(maps.Keys(names)))
	}
	return names
}

func TestDashboard(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		SchemaVersion int `json:"schemaVersion"`
		Inputs        []struct {
			Name, Type, PluginID string
		} `json:"__inputs"`
		Panels []struct {
			ID         int    `json:"id"`
			Type       string `json:"type"`
			Title      string `json:"title"`
			Datasource *struct {
				Type, UID string
			} `json:"datasource"`
			GridPos struct{ X, Y, W, H int } `json:"gridPos"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if dash.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d, want a current one", dash.SchemaVersion)
	}
	if len(dash.Inputs) != 1 || dash.Inputs[0].Name != "DS_PROMETHEUS" || dash.Inputs[0].PluginID != "prometheus" {
		t.Errorf("__inputs %+v, want one Prometheus input DS_PROMETHEUS", dash.Inputs)
	}
	ids := map[int]string{}
	for _, p := range dash.Panels {
		if other, ok := ids[p.ID]; ok {
			t.Errorf("panels %q and %q share id %d", p.Title, other, p.ID)
		}
		ids[p.ID] = p.Title
		if p.GridPos.X+p.GridPos.W > 24 || p.GridPos.W <= 0 || p.GridPos.H <= 0 {
			t.Errorf("panel %q: gridPos %+v outside the 24 columns", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${DS_PROMETHEUS}" {
			t.Errorf("panel %q: datasource %+v, want ${DS_PROMETHEUS}", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q: no query", p.Title)
		}
		for _, q := range p.Targets {
			if q.RefID == "" || !balanced(q.Expr) {
				t.Errorf("panel %q: query %q: no refId or unbalanced brackets", p.Title, q.Expr)
			}
		}
	}

	// Every name anywhere in the dashboard (queries, variables) must be
	// one the collector emits.
	names := emitted(t)
	var strs []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			strs = append(strs, v)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	var all any
	if err := json.Unmarshal(raw, &all); err != nil {
		t.Fatal(err)
	}
	walk(all)
	used := map[string]bool{}
	for _, s := range strs {
		for _, n := range seriesName.FindAllString(s, -1) {
			used[n] = true
			if _, ok := names[n]; !ok {
				t.Errorf("dashboard uses %s, which directord does not emit", n)
			}
		}
	}
	if len(used) == 0 {
		t.Error("the dashboard uses no directord_ series")
	}
}

func TestDocs(t *testing.T) {
	raw, err := os.ReadFile(docFile)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	names := emitted(t)
	mentioned := map[string]bool{}
	for _, n := range seriesName.FindAllString(doc, -1) {
		mentioned[n] = true
		if _, ok := names[n]; !ok {
			t.Errorf("%s names %s, which directord does not emit", docFile, n)
		}
	}
	for n, family := range names {
		if family && !mentioned[n] {
			t.Errorf("%s does not document %s", docFile, n)
		}
	}
}

// balanced reports whether the brackets of a PromQL expression pair up,
// outside its quoted strings.
func balanced(expr string) bool {
	var stack []rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	var quote rune
	for _, r := range expr {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '"' || r == '\'' || r == '`':
			quote = r
		case r == '(' || r == '[' || r == '{':
			stack = append(stack, r)
		case pairs[r] != 0:
			if len(stack) == 0 || stack[len(stack)-1] != pairs[r] {
				return false
			}
			stack = stack[:len(stack)-1]
		}
	}
	return len(stack) == 0 && quote == 0
}
