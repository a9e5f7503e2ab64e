package app

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
)

// metricValue reads one sample of serve's /metrics ("" = absent).
func metricValue(t *testing.T, s *Serve, series string) string {
	t.Helper()
	_, body := getBody(t, s.URL()+"/metrics")
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

func embeddedServe(t *testing.T, ctx context.Context) *Serve {
	t.Helper()
	cfg := DefaultServeConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.NATS.Port = 0
	cfg.Frontend.LoadPollInterval = -1
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return runServe(t, ctx, "serve", cfg)
}

// TestServeRefusesBadRegistrations: registry entries written straight
// into the bucket (as a hostile or buggy worker could) are refused with a
// reason counted in kvrouter_workers_refused_total, and the router keeps
// running: a dp_size of 2^62 used to panic in router.AddWorker inside the
// registry watch and take the process down. A good worker still joins.
func TestServeRefusesBadRegistrations(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := embeddedServe(t, ctx)
	reg := discovery.NewRegistry(s.Conn(), discovery.RegistryConfig{Logger: eventplanetest.Quiet})
	if err := reg.Register(ctx, discovery.Worker{ID: 1, URL: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	kv, err := s.Conn().JS.KeyValue(ctx, "kvrouter_workers")
	if err != nil {
		t.Fatal(err)
	}
	for key, val := range map[string]string{
		"w.5":   `{"id":5,"url":"http://127.0.0.1:5","dp_size":4611686018427387904}`,
		"w.6":   `not json`,
		"w.7":   `{"id":8,"url":"http://127.0.0.1:7"}`,
		"w.9":   `{"id":9,"url":"ftp://127.0.0.1:9"}`,
		"w.abc": `{"id":1,"url":"http://127.0.0.1:1"}`,
		"w.10":  `{"id":10,"url":"http://127.0.0.1:10","block_size":32}`,
		"w.12":  `{"id":12,"url":"http://127.0.0.1:12","total_kv_blocks":9223372036854775807}`,
	} {
		if _, err := kv.Put(ctx, key, []byte(val)); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.Register(ctx, discovery.Worker{ID: 11, URL: "http://127.0.0.1:11", DPSize: 2}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"invalid": "3", "decode": "1", "id_mismatch": "1", "key": "1", "block_size": "1"}
	eventplanetest.WaitFor(t, 20*time.Second, "every bad registration refused", func() bool {
		for reason, n := range want {
			if metricValue(t, s, `kvrouter_workers_refused_total{reason="`+reason+`"}`) != n {
				return false
			}
		}
		return s.Frontend().Router().Stats().Workers == 2
	})
	ids := []uint64{}
	for _, w := range s.Frontend().Workers() {
		ids = append(ids, w.ID)
	}
	if len(ids) != 2 || ids[0] != 1 || ids[1] != 11 {
		t.Errorf("workers %v, want [1 11]", ids)
	}
}

// TestServeWorkerEpoch: a worker that registers again with a new epoch
// restarted with an empty cache; its blocks leave the index (the same
// registration with the same epoch changes nothing).
func TestServeWorkerEpoch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := embeddedServe(t, ctx)
	reg := discovery.NewRegistry(s.Conn(), discovery.RegistryConfig{Logger: eventplanetest.Quiet})
	w := discovery.Worker{ID: 3, URL: "http://127.0.0.1:3", Epoch: "a"}
	if err := reg.Register(ctx, w); err != nil {
		t.Fatal(err)
	}
	eventplanetest.WaitFor(t, 20*time.Second, "worker 3 joins", func() bool { return s.Frontend().Router().Stats().Workers == 1 })
	blocks := func() int {
		if err := s.Frontend().Flush(ctx); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, x := range s.Frontend().IndexSummaries().Workers {
			if x.Worker == 3 {
				n += x.Total
			}
		}
		return n
	}
	ev := stored(3, 1, 4)
	if err := s.Frontend().Apply(&ev); err != nil {
		t.Fatal(err)
	}
	if n := blocks(); n != 4 {
		t.Fatalf("index holds %d blocks of worker 3, want 4", n)
	}
	w.Labels = map[string]string{"zone": "b"} // same epoch: an update, not a restart
	if err := reg.Register(ctx, w); err != nil {
		t.Fatal(err)
	}
	eventplanetest.WaitFor(t, 20*time.Second, "label update seen", func() bool {
		ws := s.Frontend().Router().Workers()
		return len(ws) == 1 && ws[0].Labels["zone"] == "b"
	})
	if n := blocks(); n != 4 || s.Members().Restarts() != 0 {
		t.Fatalf("an update of the same epoch dropped blocks (%d left) or counted a restart (%d)", n, s.Members().Restarts())
	}
	w.Epoch = "b"
	if err := reg.Register(ctx, w); err != nil {
		t.Fatal(err)
	}
	// Restarts counts before the leave and the join again (Fleet.Join):
	// wait for the join, then check what the leave dropped.
	eventplanetest.WaitFor(t, 20*time.Second, "restart seen, worker back in routing", func() bool {
		return s.Members().Restarts() == 1 && s.Frontend().Router().Stats().Workers == 1
	})
	if n := blocks(); n != 0 {
		t.Errorf("index holds %d blocks of the restarted worker", n)
	}
}
