package pool

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/router"
	"github.com/prometheus/client_golang/prometheus"
)

// TestLoadedAdaptersSteerRouting: the adapters each engine lists on GET
// /v1/models become that worker's loaded set in the router, so a request
// for one goes to a worker that has it (on an idle fleet: the others pay
// its load); a worker that announced its
// adapters at registration keeps them whatever its /v1/models says.
func TestLoadedAdaptersSteerRouting(t *testing.T) {
	answers := map[string]string{
		"/w1": `{"data":[{"id":"base","root":"base"},{"id":"sql","root":"/a/sql","parent":"base"}]}`,
		"/w2": `{"data":[{"id":"base","root":"base"}]}`,
		"/w3": `{"data":[{"id":"base","root":"base"}]}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for prefix, body := range answers {
			if r.URL.Path == prefix+"/v1/models" {
				_, _ = w.Write([]byte(body))
				return
			}
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	cfg := router.DefaultConfig()
	cfg.BlockSize = 4
	rt, err := router.New(cfg, router.Options{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	p := New(Config{Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(), Client: srv.Client()}, rt)
	for id := uint64(1); id <= 2; id++ {
		if err := p.Join(discovery.Worker{ID: id, URL: fmt.Sprintf("%s/w%d", srv.URL, id), MaxNumSeqs: 8}); err != nil {
			t.Fatal(err)
		}
	}
	base := "base"
	// Worker 3 announces "chat" loaded; its /v1/models does not list it.
	if err := p.Join(discovery.Worker{ID: 3, URL: srv.URL + "/w3", MaxLoRAs: 2, LoRAs: []string{"chat"}}); err != nil {
		t.Fatal(err)
	}
	p.adapters.learn([]engineModel{{ID: "chat", Parent: &base}})
	for _, w := range p.List() {
		p.learnAdapters(context.Background(), &w)
	}
	got := map[uint64]router.WorkerInfo{}
	for _, w := range p.List() {
		got[w.ID] = w.Info
	}
	if i := got[1]; !i.LoRAKnown || fmt.Sprint(i.LoRAs) != "[sql]" {
		t.Fatalf("worker 1: known %v, loaded %v", i.LoRAKnown, i.LoRAs)
	}
	if i := got[2]; !i.LoRAKnown || len(i.LoRAs) != 0 {
		t.Fatalf("worker 2: known %v, loaded %v", i.LoRAKnown, i.LoRAs)
	}
	if i := got[3]; fmt.Sprint(i.LoRAs) != "[chat]" || i.MaxLoRAs != 2 {
		t.Fatalf("worker 3: loaded %v, max %d", i.LoRAs, i.MaxLoRAs)
	}
	now := time.Unix(0, 0)
	for i, want := range map[string]uint64{"sql": 1, "chat": 3} {
		for n := range 4 {
			d, err := rt.Route(context.Background(), router.Request{ID: fmt.Sprint(i, n), Tokens: make([]uint32, 32), LoRA: p.LoRA(i)}, now)
			if err != nil {
				t.Fatal(err)
			}
			if d.Worker.ID != want {
				t.Fatalf("request %d for %s went to worker %d, want %d", n, i, d.Worker.ID, want)
			}
			// Idle again: the adapter's load elsewhere outweighs nothing
			// else (a queue would, past a load: selector lora.go).
			if err := rt.Free(d.RequestID, now); err != nil {
				t.Fatal(err)
			}
		}
	}
}
