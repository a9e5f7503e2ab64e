package frontend

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kvrouter/kvrouter/internal/decisionlog"
	"github.com/kvrouter/kvrouter/router"
)

// The serving path writes a decision log that explain reads and replay
// scores identically with the same binary.
func TestDecisionLogServeExplainReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	s := newServerWith(t, false, func(c *Config) {
		c.Router.Policy = router.PolicyKV
		c.DecisionLog = decisionlog.Config{Path: path}
	})
	var hits atomic.Int64
	live := fakeWorker(t, 0, &hits)
	if err := s.AddWorker(Worker{ID: 1, URL: deadURL(t)}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddWorker(Worker{ID: 2, URL: live.URL}); err != nil {
		t.Fatal(err)
	}
	const n = 4
	for i := range n {
		if rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hello there, how are you today","stream":true}`); rec.Code != 200 {
			t.Fatalf("request %d: %d %s", i, rec.Code, rec.Body.String())
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := decisionlog.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	ok := 0
	for _, r := range recs {
		switch {
		case r.Outcome == "ok" && r.Worker == "2":
			ok++
		case r.Outcome == "unreached" && r.Worker == "1":
		default:
			t.Errorf("record %s: worker %s outcome %q", r.ID, r.Worker, r.Outcome)
		}
		if r.In == nil || len(r.Cands) == 0 || strings.Contains(r.ID, "hello") {
			t.Errorf("record %s: inputs %v, %d candidates", r.ID, r.In != nil, len(r.Cands))
		}
	}
	t.Logf("%d records", len(recs))
	if ok != n {
		t.Fatalf("%d ok records of %d requests (%d records)", ok, n, len(recs))
	}
	if raw, _ := os.ReadFile(path); bytes.Contains(raw, []byte("hello")) {
		t.Fatal("the log holds the prompt")
	}
	var out bytes.Buffer
	last := recs[len(recs)-1]
	if err := decisionlog.Run(&out, path, decisionlog.Options{Request: last.ID}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "request "+last.ID+" -> worker 2 ") || !strings.Contains(out.String(), "* w2 ") {
		t.Fatalf("explain:\n%s", out.String())
	}
	out.Reset()
	if err := decisionlog.Run(&out, path, decisionlog.Options{Replay: true}); err != nil {
		t.Fatalf("replay: %v\n%s", err, out.String())
	}
	if want := "0 choices changed, 0 with changed costs"; !strings.Contains(out.String(), want) {
		t.Fatalf("replay on the same binary:\n%s", out.String())
	}
}
