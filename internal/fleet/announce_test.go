package fleet_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/kvrouter/kvrouter/internal/fleet"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/mocker"
)

// lineWriter hands each write to a channel, so the test waits on the
// banner instead of polling.
type lineWriter struct {
	once sync.Once
	c    chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { w.c <- string(p) })
	return len(p), nil
}

// TestRunAnnounced: the banner is written once the fleet is ready and
// names its router URL and worker count; cancelling returns ready=true.
func TestRunAnnounced(t *testing.T) {
	eng := mocker.DefaultConfig()
	eng.SpeedupRatio = 0
	fc := frontend.DefaultConfig()
	fc.Seed, fc.LoadPollInterval = 1, -1
	f, err := fleet.New(fleet.Config{Workers: 2, Engine: eng, Frontend: fc, Direct: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &lineWriter{c: make(chan string, 1)}
	type result struct {
		ready bool
		err   error
	}
	done := make(chan result, 1)
	go func() {
		ready, err := f.RunAnnounced(ctx, w, []string{"k1", "k2"})
		done <- result{ready, err}
	}()
	var banner string
	select {
	case banner = <-w.c:
	case r := <-done:
		t.Fatalf("stopped before the banner: %+v", r)
	}
	for _, want := range []string{"router " + f.URL() + ", 2 mocker workers", "Bearer k1'"} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}
	cancel()
	if r := <-done; !r.ready || r.err != nil {
		t.Fatalf("after cancel: ready %v err %v, want true, nil", r.ready, r.err)
	}
}
