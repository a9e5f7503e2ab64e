package deploy

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/internal/epp"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/tokenizer"
	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"
)

// exported returns the names of every metric the router registers: the
// frontend's (the same registry serve exposes on /metrics) and the
// endpoint picker's, from the registry's descriptors (so a vector that
// has not seen a label value yet counts too).
func exported(t *testing.T) map[string]bool {
	t.Helper()
	tok, err := tokenizer.Default(tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fc := frontend.DefaultConfig()
	fc.Tokenizer = tok
	fc.Registry = prometheus.NewRegistry()
	fe, err := frontend.New(fc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := epp.New(epp.DefaultProtocolConfig(), fe); err != nil {
		t.Fatal(err)
	}
	ch := make(chan *prometheus.Desc, 256)
	go func() { fc.Registry.Describe(ch); close(ch) }()
	re := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := map[string]bool{}
	for d := range ch {
		if m := re.FindStringSubmatch(d.String()); m != nil {
			names[m[1]] = true
		}
	}
	return names
}

// TestDashboardMetricsExported checks that every metric the Grafana
// dashboard queries is one the router exports (histogram series by their
// base name), and that the dashboard covers the panels.
func TestDashboardMetricsExported(t *testing.T) {
	raw, err := os.ReadFile("grafana/kvrouter.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&dash); err != nil {
		t.Fatal(err)
	}
	names := exported(t)
	re := regexp.MustCompile(`\bkvrouter_[a-z0-9_]+`)
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Fatalf("panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			ms := re.FindAllString(tg.Expr, -1)
			if len(ms) == 0 {
				t.Fatalf("panel %q: %q queries no kvrouter metric", p.Title, tg.Expr)
			}
			for _, m := range ms {
				base := m
				for _, suf := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(m, suf); ok && names[b] {
						base = b
					}
				}
				if !names[base] {
					t.Errorf("panel %q queries %s, which the router does not export", p.Title, m)
				}
				used[base] = true
			}
		}
	}
	// Decisions per worker, predicted hit rate, TTFT, queue, event lag,
	// ingestion errors, index size per tier.
	for _, m := range []string{"kvrouter_route_decisions_total", "kvrouter_overlap_blocks_total", "kvrouter_ttft_seconds",
		"kvrouter_queue_depth", "kvrouter_event_lag_seconds", "kvrouter_events_rejected_total", "kvrouter_index_blocks"} {
		if !used[m] {
			t.Errorf("the dashboard has no panel on %s", m)
		}
	}
	if !slices.Contains([]string{"kvrouter"}, dash.Title) {
		t.Errorf("dashboard title %q", dash.Title)
	}
}

// TestScrapeConfig decodes the Prometheus scrape configuration strictly
// and checks it keeps the pods the manifests annotate, on their metrics
// port.
func TestScrapeConfig(t *testing.T) {
	f, err := os.Open("prometheus/scrape.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sc scrapeFile
	d := yaml.NewDecoder(f)
	d.KnownFields(true)
	if err := d.Decode(&sc); err != nil {
		t.Fatal(err)
	}
	if len(sc.ScrapeConfigs) != 1 {
		t.Fatalf("%d scrape configs", len(sc.ScrapeConfigs))
	}
	job := sc.ScrapeConfigs[0]
	if job.MetricsPath != "/metrics" || len(job.KubernetesSDConfigs) != 1 || job.KubernetesSDConfigs[0].Role != "pod" {
		t.Fatalf("job %+v", job)
	}
	keep, port := false, false
	for _, r := range job.RelabelConfigs {
		src := strings.Join(r.SourceLabels, ",")
		keep = keep || r.Action == "keep" && src == "__meta_kubernetes_pod_annotation_prometheus_io_scrape" && r.Regex == "true"
		port = port || strings.Contains(src, "prometheus_io_port") && r.TargetLabel == "__address__"
	}
	if !keep || !port {
		t.Fatalf("scrape config keeps annotated pods %v, uses their port annotation %v", keep, port)
	}
	// The manifests annotate the picker's pods for this job.
	raw, err := os.ReadFile("kubernetes/epp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var o objects
	decode(t, "epp.yaml", raw, &o)
	ann := findDeployment(t, o, "kvrouter-epp").Spec.Template.Annotations
	if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] == "" {
		t.Fatalf("picker pod annotations %v", ann)
	}
}
