package app

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// syncBuffer is a bytes.Buffer safe for the logger's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// stored is a Stored event of n blocks from the root for worker w.
func stored(w uint64, id uint64, n int) kvevents.Event {
	locals := make([]uint64, n)
	for i := range locals {
		locals[i] = uint64(1000*w) + uint64(i)
	}
	seq := kvhash.SeqHashes(locals)
	ev := kvevents.Event{WorkerID: w, EventID: id, Kind: kvevents.KindStored}
	for i := range locals {
		ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: seq[i], Local: locals[i]})
	}
	return ev
}

// TestServeRuntime runs the serve runtime on an external (test-started)
// NATS with events already in the stream: when Ready closes, those events
// are in the index (the subscriber caught up and the sticky writers
// flushed), the index is the flash kind behind indexer.Concurrent with the
// configured stride and writers, and the effective config was logged once
// with the API key masked.
func TestServeRuntime(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	quiet := eventplanetest.Quiet
	nats := eventplanetest.Embedded(t)
	pub := eventplane.NewPublisher(nats, eventplane.PublisherConfig{Model: DefaultModel, Logger: quiet})
	pubDone := make(chan error, 1)
	go func() { pubDone <- pub.Run(ctx) }()
	const workers, blocks = 3, 40
	for w := uint64(1); w <= workers; w++ {
		if err := pub.Publish(ctx, stored(w, 1, blocks)); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	var logs syncBuffer
	cfg := DefaultServeConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.NATS.URL = nats.ClientURL()
	// Events of workers neither static nor registered wait for their
	// registration; these are static, and so is worker 9, whose event
	// comes while serve runs.
	for _, w := range []uint64{1, 2, 3, 9} {
		cfg.StaticWorkers = append(cfg.StaticWorkers, discovery.Worker{ID: w, URL: fmt.Sprintf("http://127.0.0.1:%d", w)})
	}
	cfg.Frontend.Router.Index.Flash.Stride = 8
	cfg.Frontend.Router.Index.Concurrent.Writers = 3
	cfg.Frontend.APIKeys = []string{"s3cret-key"}
	cfg.Frontend.LoadPollInterval = -1
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	s, err := NewServe(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatalf("serve stopped before ready: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve not ready after 30s")
	}

	fe := s.Frontend()
	if k := fe.IndexKind(); k != frontend.IndexFlash {
		t.Errorf("index kind %q, want flash (the default)", k)
	}
	conc, ok := fe.Router().Index(kvevents.TierDevice).(*indexer.Concurrent)
	if !ok {
		t.Fatalf("device index is %T, want *indexer.Concurrent", fe.Router().Index(kvevents.TierDevice))
	}
	groups, ok := conc.Index().(*indexer.Groups)
	if !ok {
		t.Fatalf("wrapped index is %T, want *indexer.Groups", conc.Index())
	}
	flash, ok := groups.Inner().(*indexer.Flash)
	if !ok {
		t.Fatalf("index under the groups overlay is %T, want *indexer.Flash", groups.Inner())
	}
	if flash.Stride() != 8 || conc.Writers() != 3 {
		t.Errorf("stride %d writers %d: the configured 8 and 3 did not reach the index", flash.Stride(), conc.Writers())
	}
	rep := fe.IndexSummaries()
	if len(rep.Workers) != workers+1 {
		t.Fatalf("index lists %d workers at ready, want %d: %+v", len(rep.Workers), workers+1, rep.Workers)
	}
	for _, w := range rep.Workers {
		if want := map[bool]int{true: 0, false: blocks}[w.Worker == 9]; w.Total != want {
			t.Errorf("worker %d: %d blocks at ready, want %d", w.Worker, w.Total, want)
		}
	}
	// An event published while running lands through the same path.
	if err := pub.Publish(ctx, stored(9, 1, 5)); err != nil {
		t.Fatal(err)
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	nine := func() int {
		for _, w := range fe.IndexSummaries().Workers {
			if w.Worker == 9 {
				return w.Total
			}
		}
		return 0
	}
	for nine() != 5 {
		select {
		case <-deadline.C:
			t.Fatalf("event of worker 9 not in the index: %+v", fe.IndexSummaries().Workers)
		case <-tick.C:
		}
	}
	resp, err := http.Get(s.URL() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	stop()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	out := logs.String()
	if strings.Count(out, `msg="effective config"`) != 1 {
		t.Errorf("effective config logged %d times, want once", strings.Count(out, `msg="effective config"`))
	}
	for _, want := range []string{"router.policy=kv", "index=flash", "router.index.flash.stride=8", "api_keys=[*****]"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "s3cret-key") {
		t.Errorf("API key in the log:\n%s", out)
	}
	cancel()
	<-pubDone
}

// TestRedacted masks every secret and nothing else, and leaves the
// original config alone.
func TestRedacted(t *testing.T) {
	c := DefaultServeConfig()
	c.Frontend.APIKeys, c.Frontend.AdminKeys = []string{"k1-SECRET", "k2-SECRET"}, []string{"adm-SECRET"}
	c.NATS.User, c.NATS.Password, c.NATS.Token = "alice", "pw-SECRET", "tok-SECRET"
	r := c.Redacted()
	var logs syncBuffer
	logConfig(slog.New(slog.NewTextHandler(&logs, nil)), "effective config", r)
	out := logs.String()
	if strings.Contains(out, "SECRET") {
		t.Errorf("a secret in the log: %s", out)
	}
	for _, want := range []string{"nats.user=alice", "nats.password=*****", "nats.token=*****", "api_keys=[*****,*****]", "admin_keys=[*****]", "nats.tls_ca=\"\""} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q: %s", want, out)
		}
	}
	if c.Frontend.APIKeys[0] != "k1-SECRET" || c.NATS.Password != "pw-SECRET" {
		t.Error("Redacted modified the original")
	}
	m := DefaultMockerConfig()
	m.NATS.Password = "pw"
	if m.Redacted().NATS.Password != "*****" {
		t.Error("mocker NATS password not masked")
	}
	b := DefaultBridgeConfig()
	b.NATS.Token = "tok"
	if b.Redacted().NATS.Token != "*****" {
		t.Error("bridge NATS token not masked")
	}
}

// TestDefaultsAgree: serve, mocker and bridge share block size and model.
func TestDefaultsAgree(t *testing.T) {
	s, m, b := DefaultServeConfig(), DefaultMockerConfig(), DefaultBridgeConfig()
	if s.Frontend.Router.BlockSize != m.Mocker.Engine.BlockSize || m.Mocker.Engine.BlockSize != b.BlockSize {
		t.Errorf("block sizes serve %d mocker %d bridge %d", s.Frontend.Router.BlockSize, m.Mocker.Engine.BlockSize, b.BlockSize)
	}
	if s.Frontend.Model != m.Mocker.Model || m.Mocker.Model != b.Model {
		t.Errorf("models serve %q mocker %q bridge %q", s.Frontend.Model, m.Mocker.Model, b.Model)
	}
	if s.Frontend.Index != frontend.IndexFlash {
		t.Errorf("serve index %q, want flash", s.Frontend.Index)
	}
	for name, err := range map[string]error{"serve": s.Validate(), "mocker": m.Validate()} {
		if err != nil {
			t.Errorf("%s defaults invalid: %v", name, err)
		}
	}
	b.ZMQ, b.WorkerID = "tcp://127.0.0.1:5557", 1
	if err := b.Validate(); err != nil {
		t.Errorf("bridge defaults invalid: %v", err)
	}
}
