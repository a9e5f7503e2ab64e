package frontend

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/kvrouter/kvrouter/router"
)

// TestSettlerStopsSettled: the proxy leaves a request's booking and end to
// the settler (router.Options.Deferred, FreeLater); when Run's context is
// done the settler applies whatever is still pending before Run returns,
// so a stopped server leaves nothing unsettled (by design: dumps and
// snapshots taken after Run see every booking and end).
func TestSettlerStopsSettled(t *testing.T) {
	s := newServer(t, router.PolicyKV)
	var hits atomic.Int64
	w := fakeWorker(t, 0, &hits)
	if err := s.AddWorker(Worker{ID: 1, URL: w.URL}); err != nil {
		t.Fatal(err)
	}
	// Run is not running: the end waits for a settle.
	if rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hello there","stream":true}`); rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body.String())
	}
	if st := s.Router().SettleStats(); st.Unsettled == 0 {
		t.Fatalf("%+v: the request's end should be pending", st)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if st := s.Router().SettleStats(); st.Unsettled != 0 {
		t.Fatalf("%+v: Run returned with work pending", st)
	}
	if st := s.Router().Stats(); st.Active != 0 || st.Routed != 1 {
		t.Fatalf("%+v: want the request routed and freed", st)
	}
}
