package deploy

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// The Grafana dashboards in deploy/grafana query the metrics that
// docs/metrics.md documents, by their Prometheus names. These tests keep the
// two from drifting apart: every metric and label a dashboard (or a PromQL
// example of the doc) uses must be in the doc's tables.

// metricsDoc is what docs/metrics.md documents: Prometheus metric names (the
// "Prometheus name" column of its tables), which of them are histograms (the
// "type" column), and label names (the "Prometheus label" column).
type metricsDoc struct {
	metrics    map[string]bool
	histograms map[string]bool
	labels     map[string]bool
	promql     []string // the ```promql blocks
}

var backticked = regexp.MustCompile("`([^`]+)`")

func readMetricsDoc(t *testing.T) metricsDoc {
	t.Helper()
	return parseMetricsDoc(t, string(readFile(t, repoPath(t, "docs", "metrics.md"))))
}

func parseMetricsDoc(t *testing.T, doc string) metricsDoc {
	t.Helper()
	d := metricsDoc{metrics: map[string]bool{}, histograms: map[string]bool{}, labels: map[string]bool{}}
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if strings.HasPrefix(line, "```promql") {
			var b strings.Builder
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
				b.WriteString(lines[i] + "\n")
			}
			d.promql = append(d.promql, b.String())
			continue
		}
		if !strings.HasPrefix(line, "|") {
			continue
		}
		// A table: its header, the delimiter row, then its rows.
		header := tableCells(line)
		nameCol, typeCol, labelCol := -1, -1, -1
		for c, h := range header {
			switch strings.ToLower(h) {
			case "prometheus name":
				nameCol = c
			case "type":
				typeCol = c
			case "prometheus label":
				labelCol = c
			}
		}
		for i += 2; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
			row := tableCells(strings.TrimSpace(lines[i]))
			if len(row) != len(header) {
				t.Fatalf("docs/metrics.md:%d: %d cells in a table of %d columns", i+1, len(row), len(header))
			}
			if nameCol >= 0 {
				names := backticked.FindAllStringSubmatch(row[nameCol], -1)
				if len(names) == 0 {
					t.Fatalf("docs/metrics.md:%d: no backticked name in the Prometheus name column", i+1)
				}
				for _, m := range names {
					d.metrics[m[1]] = true
					if typeCol >= 0 && strings.Contains(row[typeCol], "histogram") {
						d.histograms[m[1]] = true
					}
				}
			}
			if labelCol >= 0 {
				for _, m := range backticked.FindAllStringSubmatch(row[labelCol], -1) {
					d.labels[m[1]] = true
				}
			}
		}
		i--
	}
	return d
}

// tableCells splits a Markdown table row "| a | b |" into its trimmed cells.
func tableCells(row string) []string {
	row = strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|")
	cells := strings.Split(row, "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

func TestMetricsDocTables(t *testing.T) {
	d := readMetricsDoc(t)
	// The tables this file's checks rely on must still be there.
	for _, m := range []string{
		"http_server_request_duration_seconds", "http_client_request_duration_seconds",
		"traces_service_graph_request_total", "traces_service_graph_request_server_seconds",
	} {
		if !d.metrics[m] {
			t.Errorf("docs/metrics.md: %s is not in a table with a \"Prometheus name\" column", m)
		}
	}
	for _, h := range []string{"http_server_request_duration_seconds", "traces_service_graph_request_client_seconds"} {
		if !d.histograms[h] {
			t.Errorf("docs/metrics.md: %s is not typed histogram", h)
		}
	}
	for _, l := range []string{"service_name", "http_route", "client", "server", "otel_metric_overflow"} {
		if !d.labels[l] {
			t.Errorf("docs/metrics.md: label %s is not in a table with a \"Prometheus label\" column", l)
		}
	}
	if len(d.promql) < 5 {
		t.Errorf("docs/metrics.md has %d promql examples; has the fence changed?", len(d.promql))
	}
	for i, q := range d.promql {
		for _, err := range checkPromQL(d, q, nil) {
			t.Errorf("docs/metrics.md, promql example %d: %v", i+1, err)
		}
	}
}

// grafanaIntervals are Grafana's interval variables, which stand where
// PromQL wants a duration.
var grafanaIntervals = regexp.MustCompile(`\$(__rate_interval|__interval|__range)\b|\$\{(__rate_interval|__interval|__range)\}`)

var variableRef = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::[A-Za-z]+)?\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// checkPromQL parses expr as a Grafana target's PromQL (Grafana's interval
// variables replaced by a duration) and returns what is wrong with it: a
// syntax error, a variable the dashboard does not define (vars nil: none is
// allowed), a metric or a label docs/metrics.md does not document.
func checkPromQL(d metricsDoc, expr string, vars map[string]bool) []error {
	var errs []error
	expr = grafanaIntervals.ReplaceAllString(expr, "5m")
	for _, m := range variableRef.FindAllStringSubmatch(expr, -1) {
		name := m[1] + m[2]
		if !vars[name] {
			errs = append(errs, fmt.Errorf("variable $%s is not defined by the dashboard", name))
		}
	}
	ast, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return append(errs, fmt.Errorf("%q does not parse: %v", expr, err))
	}
	buckets := false          // whether a _bucket series is selected: then `le` is a label
	made := map[string]bool{} // labels that label_replace/label_join create
	var used []string
	parser.Inspect(ast, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			name := n.Name
			for _, m := range n.LabelMatchers {
				if m.Name == labels.MetricName {
					if m.Type != labels.MatchEqual {
						errs = append(errs, fmt.Errorf("%s: the metric name is matched by %s, not named", n, m.Type))
					}
					name = m.Value
					continue
				}
				used = append(used, m.Name)
			}
			if name == "" {
				errs = append(errs, fmt.Errorf("%s selects no metric by name", n))
				break
			}
			if d.histograms[name] {
				errs = append(errs, fmt.Errorf("%s is a histogram: its series are %[1]s_bucket, %[1]s_sum and %[1]s_count", name))
				break
			}
			if d.metrics[name] {
				break
			}
			ok := false
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, found := strings.CutSuffix(name, suffix); found && d.histograms[b] {
					ok = true
					buckets = buckets || suffix == "_bucket"
				}
			}
			if !ok {
				errs = append(errs, fmt.Errorf("metric %s is not documented in docs/metrics.md", name))
			}
		case *parser.AggregateExpr:
			used = append(used, n.Grouping...)
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				used = append(used, n.VectorMatching.MatchingLabels...)
				used = append(used, n.VectorMatching.Include...)
			}
		case *parser.Call:
			// label_replace(v, dst, replacement, src, regex) and
			// label_join(v, dst, separator, src...): dst is made, the
			// sources must exist.
			if n.Func.Name != "label_replace" && n.Func.Name != "label_join" {
				break
			}
			for i, arg := range n.Args {
				s, ok := arg.(*parser.StringLiteral)
				switch {
				case !ok:
				case i == 1:
					made[s.Val] = true
				case i == 3 || (i > 3 && n.Func.Name == "label_join"):
					used = append(used, s.Val)
				}
			}
		}
		return nil
	})
	for _, l := range used {
		if !d.labels[l] && !made[l] && (l != "le" || !buckets) {
			errs = append(errs, fmt.Errorf("label %s is not documented in docs/metrics.md", l))
		}
	}
	return errs
}

func TestCheckPromQLCatchesDrift(t *testing.T) {
	d := readMetricsDoc(t)
	for _, bad := range []string{
		`sum(rate(http_server_requests_total[5m]))`,                                                       // no such metric
		`sum by (route) (rate(http_server_request_duration_seconds_count[5m]))`,                           // no such label
		`rate(http_server_request_duration_seconds_count{path="/x"}[5m])`,                                 // no such label
		`rate(traces_service_graph_request_total_bucket[5m])`,                                             // a counter has no buckets
		`sum by (le) (rate(http_server_request_duration_seconds_count[5m]))`,                              // le without buckets
		`sum(rate(http_server_request_duration_seconds_count[5m])`,                                        // unbalanced
		`rate(http_server_request_duration_seconds_count{service_name=~"$nope"}[5m])`,                     // undefined variable
		`rate({__name__=~"http_.*"}[5m])`,                                                                 // no metric name
		`sum by (service_name) (rate(http_server_request_duration_seconds[5m]))`,                          // the bare histogram name is no series
		`label_replace(rate(http_server_request_duration_seconds_count[5m]), "x", "$1", "route", "(.*)")`, // no such source label
	} {
		if errs := checkPromQL(d, bad, map[string]bool{"service": true}); len(errs) == 0 {
			t.Errorf("%s: no error", bad)
		}
	}
	good := `histogram_quantile(0.95, sum by (service_name, le) (rate(http_server_request_duration_seconds_bucket{service_name=~"$service"}[$__rate_interval])))`
	if errs := checkPromQL(d, good, map[string]bool{"service": true}); len(errs) != 0 {
		t.Errorf("%s: %v", good, errs)
	}
}

// grafanaPanel is the part of a dashboard panel that is checked.
type grafanaPanel struct {
	ID         *int            `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	GridPos    *gridPos        `json:"gridPos"`
	Datasource *datasourceRef  `json:"datasource"`
	Targets    []grafanaTarget `json:"targets"`
	Panels     []grafanaPanel  `json:"panels"` // a collapsed row's
}

type gridPos struct {
	X, Y, W, H *int
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaTarget struct {
	RefID        string         `json:"refId"`
	Expr         string         `json:"expr"`
	LegendFormat string         `json:"legendFormat"`
	Datasource   *datasourceRef `json:"datasource"`
}

type grafanaVariable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *datasourceRef  `json:"datasource"`
}

type grafanaDashboard struct {
	Title         *string        `json:"title"`
	UID           *string        `json:"uid"`
	SchemaVersion *int           `json:"schemaVersion"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []grafanaVariable `json:"list"`
	} `json:"templating"`
}

var (
	labelValues   = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)
	legendLabel   = regexp.MustCompile(`\{\{\s*([^}\s]+)\s*\}\}`)
	datasourceVar = map[string]bool{"${datasource}": true, "$datasource": true}
)

func TestGrafanaDashboards(t *testing.T) {
	d := readMetricsDoc(t)
	files, err := filepath.Glob(repoPath(t, "deploy", "grafana", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no dashboard in deploy/grafana")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { checkDashboard(t, d, readFile(t, f)) })
	}
}

func checkDashboard(t *testing.T, d metricsDoc, raw []byte) {
	var dash grafanaDashboard
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("not a JSON dashboard: %v", err)
	}
	if dash.Title == nil || *dash.Title == "" {
		t.Error("no title")
	}
	if dash.UID == nil || *dash.UID == "" || len(*dash.UID) > 40 {
		t.Errorf("uid %v: it must be set, at most 40 characters", dash.UID)
	}
	if dash.SchemaVersion == nil || *dash.SchemaVersion < 39 {
		t.Errorf("schemaVersion %v, want 39 or more", dash.SchemaVersion)
	}

	// Variables: a Prometheus data-source variable, which every query uses,
	// and query variables over documented metrics and labels.
	vars := map[string]bool{}
	for _, v := range dash.Templating.List {
		if vars[v.Name] {
			t.Errorf("variable %s defined twice", v.Name)
		}
		vars[v.Name] = true
		switch v.Type {
		case "datasource":
			var q string
			if err := json.Unmarshal(v.Query, &q); err != nil || q != "prometheus" {
				t.Errorf("data-source variable %s: query %s, want \"prometheus\"", v.Name, v.Query)
			}
		case "query":
			checkDatasource(t, "variable "+v.Name, v.Datasource)
			var q string
			if json.Unmarshal(v.Query, &q) != nil {
				var obj struct {
					Query string `json:"query"`
				}
				if err := json.Unmarshal(v.Query, &obj); err != nil {
					t.Errorf("variable %s: query %s is neither a string nor an object with a query", v.Name, v.Query)
				}
				q = obj.Query
			}
			if m := labelValues.FindStringSubmatch(q); m != nil {
				q = m[1] // the metric: checked as an expression
				if !d.labels[m[2]] {
					t.Errorf("variable %s: label %s is not documented in docs/metrics.md", v.Name, m[2])
				}
			}
			for _, err := range checkPromQL(d, q, vars) {
				t.Errorf("variable %s: %v", v.Name, err)
			}
		}
	}
	if !vars["datasource"] {
		t.Error("no data-source variable named datasource")
	}

	ids := map[int]string{}
	var walk func(panels []grafanaPanel, nested bool)
	var laidOut []grafanaPanel
	walk = func(panels []grafanaPanel, nested bool) {
		for _, p := range panels {
			where := fmt.Sprintf("panel %q", p.Title)
			if p.ID == nil {
				t.Errorf("%s: no id", where)
			} else if other, dup := ids[*p.ID]; dup {
				t.Errorf("%s: id %d is also panel %q's", where, *p.ID, other)
			} else {
				ids[*p.ID] = p.Title
			}
			if p.Type == "" || p.Title == "" {
				t.Errorf("%s: type %q and title must be set", where, p.Type)
			}
			g := p.GridPos
			if g == nil || g.X == nil || g.Y == nil || g.W == nil || g.H == nil {
				t.Errorf("%s: gridPos must set x, y, w and h", where)
			} else if *g.X < 0 || *g.Y < 0 || *g.W <= 0 || *g.H <= 0 || *g.X+*g.W > 24 {
				t.Errorf("%s: gridPos %d,%d %dx%d is outside the 24-column grid", where, *g.X, *g.Y, *g.W, *g.H)
			} else if !nested {
				laidOut = append(laidOut, p)
			}
			if p.Type != "row" {
				checkDatasource(t, where, p.Datasource)
			}
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				if tg.RefID == "" || refs[tg.RefID] {
					t.Errorf("%s: target refId %q missing or repeated", where, tg.RefID)
				}
				refs[tg.RefID] = true
				if tg.Datasource != nil {
					checkDatasource(t, where+" target "+tg.RefID, tg.Datasource)
				}
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("%s target %s: no expr", where, tg.RefID)
					continue
				}
				for _, err := range checkPromQL(d, tg.Expr, vars) {
					t.Errorf("%s target %s: %v", where, tg.RefID, err)
				}
				for _, m := range legendLabel.FindAllStringSubmatch(tg.LegendFormat, -1) {
					if !d.labels[m[1]] {
						t.Errorf("%s target %s: legend label %s is not documented", where, tg.RefID, m[1])
					}
				}
			}
			if p.Type != "row" && p.Type != "text" && len(p.Targets) == 0 {
				t.Errorf("%s: no query", where)
			}
			walk(p.Panels, true)
		}
	}
	walk(dash.Panels, false)
	if len(ids) == 0 {
		t.Error("no panels")
	}

	// Panels laid out on the top level do not overlap.
	sort.Slice(laidOut, func(i, j int) bool { return *laidOut[i].ID < *laidOut[j].ID })
	for i, a := range laidOut {
		for _, b := range laidOut[i+1:] {
			ga, gb := a.GridPos, b.GridPos
			if *ga.X < *gb.X+*gb.W && *gb.X < *ga.X+*ga.W && *ga.Y < *gb.Y+*gb.H && *gb.Y < *ga.Y+*ga.H {
				t.Errorf("panels %q and %q overlap", a.Title, b.Title)
			}
		}
	}
}

// checkDatasource requires a Prometheus query to go through the dashboard's
// data-source variable, not a data source's uid of one Grafana.
func checkDatasource(t *testing.T, where string, ds *datasourceRef) {
	t.Helper()
	if ds == nil || ds.Type != "prometheus" || !datasourceVar[ds.UID] {
		t.Errorf("%s: datasource %+v, want {prometheus ${datasource}}", where, ds)
	}
}
