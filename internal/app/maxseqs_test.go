package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/frontend"
)

// TestMaxNumSeqsReachesRouter runs what `kvrouter serve` and `kvrouter
// mocker` run (NewServe and NewMocker, then Run) on one NATS: the
// mocker's registration announces its engine's max_num_seqs and the
// router uses it; a static --worker with max-num-seqs= keeps its own; a
// static worker that says nothing gets serve's --worker-max-num-seqs.
// GET /debug/index shows each worker's cap.
func TestMaxNumSeqsReachesRouter(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nats := eventplanetest.Embedded(t)

	cfg := DefaultServeConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.NATS.URL = nats.ClientURL()
	cfg.Workers = []string{"http://127.0.0.1:9,id=9", "http://127.0.0.1:8,id=8,max-num-seqs=5"}
	cfg.Frontend.WorkerMaxNumSeqs = 48
	cfg.Frontend.LoadPollInterval = -1
	cfg.Logger = quiet
	s := runServe(t, ctx, "serve", cfg)

	mc := DefaultMockerConfig()
	mc.Listen = "127.0.0.1:0"
	mc.WorkerID = 3
	mc.NATS.URL = nats.ClientURL()
	mc.Mocker.Engine.MaxNumSeqs = 37
	mc.Mocker.Engine.SpeedupRatio = 0
	mc.Logger = quiet
	m, err := NewMocker(mc)
	if err != nil {
		t.Fatal(err)
	}
	mDone := make(chan error, 1)
	go func() { mDone <- m.Run(ctx) }()
	defer func() { cancel(); <-mDone }()

	caps := func() map[uint64]int {
		out := map[uint64]int{}
		for _, info := range s.Frontend().Router().Workers() {
			out[info.ID] = info.MaxNumSeqs
		}
		return out
	}
	waitUntil(t, 20*time.Second, "the mocker to join", func() (bool, string) {
		c := caps()
		return len(c) >= 3, fmt.Sprintf("router workers %v", c)
	})
	want := map[uint64]int{3: 37, 8: 5, 9: 48}
	if got := caps(); len(got) != 3 || got[3] != 37 || got[8] != 5 || got[9] != 48 {
		t.Fatalf("router max_num_seqs %v, want %v", got, want)
	}
	code, body := getBody(t, s.URL()+"/debug/index")
	var rep frontend.IndexReport
	if err := json.Unmarshal([]byte(body), &rep); err != nil || code != 200 {
		t.Fatalf("/debug/index %d: %v: %s", code, err, body)
	}
	seen := 0
	for _, w := range rep.Workers {
		if w.DPRank == 0 && w.MaxNumSeqs != want[w.Worker] {
			t.Errorf("/debug/index worker %d max_num_seqs %d, want %d", w.Worker, w.MaxNumSeqs, want[w.Worker])
		}
		seen++
	}
	if seen != 3 {
		t.Errorf("/debug/index lists %d workers, want 3: %s", seen, body)
	}
}
