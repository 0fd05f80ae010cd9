package deploy_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/telemetry"
)

// exportedMetrics serves every instrument the code records on a real
// Prometheus endpoint, scrapes it and returns the metric names (a
// histogram's _bucket, _sum and _count series each) and the label names
// they carry.
func exportedMetrics(t *testing.T) (names, labels map[string]bool) {
	t.Helper()
	ctx := context.Background()
	tel, shutdown, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: "grafana-test", MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = shutdown(ctx) }()
	m := tel.Meters
	a := telemetry.CallAttrs{Provider: "openai", RequestModel: "m", ResponseModel: "m", Stage: "reflect", Role: "optimizer"}
	m.RecordCall(ctx, a, time.Second, telemetry.Usage{Input: 10, Output: 3})
	a.ErrorType = "server"
	m.RecordCall(ctx, a, time.Second, telemetry.Usage{})
	m.RecordTask(ctx, "reflect", "ok")
	m.RecordRetries(ctx, "reflect", 1)
	m.RecordRateLimited(ctx, "openai", 1)
	m.RecordCacheHit(ctx, "rollout", 5)
	m.SetQueueDepth(ctx, 2)
	m.AddInFlight(ctx, "rollout", 1)
	m.SetWorkers(ctx, 2)
	if err := telemetry.ObserveCampaign(tel.MeterProvider, "c", func() []telemetry.CellSpend {
		return []telemetry.CellSpend{{Cell: "a", Calls: 3, Tokens: 40, USD: 0.01, Priced: true}}
	}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + tel.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	names, labels = map[string]bool{}, map[string]bool{"job": true, "instance": true}
	series := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? `)
	label := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)
	for _, line := range strings.Split(string(body), "\n") {
		mm := series.FindStringSubmatch(line)
		if mm == nil {
			continue
		}
		names[mm[1]] = true
		for _, l := range label.FindAllStringSubmatch(mm[3], -1) {
			labels[l[1]] = true
		}
	}
	return names, labels
}

// promqlWords are PromQL's functions, aggregations and keywords (those a
// dashboard query may use), and Grafana's label_values.
var promqlWords = map[string]bool{
	"sum": true, "max": true, "min": true, "avg": true, "count": true, "topk": true, "bottomk": true,
	"rate": true, "irate": true, "increase": true, "histogram_quantile": true, "by": true, "without": true,
	"on": true, "ignoring": true, "group_left": true, "group_right": true, "and": true, "or": true, "unless": true,
	"label_values": true, "clamp_min": true, "offset": true,
}

// TestGrafanaDashboardUsesExportedMetrics: every query of the dashboard
// in deploy/grafana names only metrics the code exports and groups and
// filters only by labels they carry.
func TestGrafanaDashboardUsesExportedMetrics(t *testing.T) {
	names, labels := exportedMetrics(t)
	raw, err := os.ReadFile(filepath.Join("grafana", "skillfleet.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title      string `json:"title"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("grafana/skillfleet.json: %v", err)
	}
	type query struct{ where, expr string }
	var qs []query
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(string); ok && v.Type == "query" {
			qs = append(qs, query{"variable " + v.Name, q})
		}
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			qs = append(qs, query{"panel " + p.Title, tg.Expr})
		}
	}
	if len(qs) < 5 {
		t.Fatalf("%d queries in the dashboard: it shows little", len(qs))
	}
	matchers := regexp.MustCompile(`\{([^}]*)\}`)
	matcherLabel := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)`)
	grouping := regexp.MustCompile(`\b(by|without)\s*\(([^)]*)\)`)
	variables := regexp.MustCompile(`\$\{?[a-zA-Z_]+\}?`)
	word := regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	used := map[string]bool{}
	for _, q := range qs {
		e := variables.ReplaceAllString(q.expr, "1")
		for _, m := range matchers.FindAllStringSubmatch(e, -1) {
			for _, l := range matcherLabel.FindAllStringSubmatch(m[1], -1) {
				if !labels[l[1]] {
					t.Errorf("%s: filters on label %s, which no exported metric carries: %s", q.where, l[1], q.expr)
				}
			}
		}
		e = matchers.ReplaceAllString(e, "")
		for _, g := range grouping.FindAllStringSubmatch(e, -1) {
			for _, l := range strings.Split(g[2], ",") {
				if l = strings.TrimSpace(l); l != "" && !labels[l] {
					t.Errorf("%s: groups by label %s, which no exported metric carries: %s", q.where, l, q.expr)
				}
			}
		}
		e = grouping.ReplaceAllString(e, "$1")
		// label_values(metric, label): the second argument is a label.
		if strings.HasPrefix(e, "label_values(") {
			args := strings.Split(strings.TrimSuffix(strings.TrimPrefix(e, "label_values("), ")"), ",")
			if len(args) != 2 || !labels[strings.TrimSpace(args[1])] {
				t.Errorf("%s: label_values of an unknown label: %s", q.where, q.expr)
			}
			e = args[0]
		}
		// Range durations ([5m]) and numbers are not names.
		e = regexp.MustCompile(`\[[^\]]*\]`).ReplaceAllString(e, "")
		for _, w := range word.FindAllString(e, -1) {
			if promqlWords[w] {
				continue
			}
			if !names[w] {
				t.Errorf("%s: metric %s is not exported by the code: %s", q.where, w, q.expr)
			}
			used[w] = true
		}
	}
	// The dashboard shows spend per stage and per cell.
	for _, want := range []string{"gen_ai_client_token_usage_sum", "skillfleet_campaign_cell_tokens"} {
		if !used[want] {
			t.Errorf("no query uses %s", want)
		}
	}
	var u []string
	for n := range used {
		u = append(u, n)
	}
	slices.Sort(u)
	t.Logf("%d queries over %d exported metrics: %v", len(qs), len(u), u)
}
