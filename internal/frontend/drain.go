package frontend

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/kvrouter/kvrouter/internal/oai"
)

// drainState counts the requests being served, for the drain: while
// in-flight requests finish, the listener stays open so that /readyz can
// answer 503 (load balancers that probe see "not ready", not a refused
// connection they might retry elsewhere as a network fault), /healthz
// 200, and any other new request 503 with Connection: close.
type drainState struct {
	active atomic.Int64
}

// drainGate wraps the API: counts requests and, once draining, turns new
// ones (other than the probes) away.
func (s *Server) drainGate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		probe := r.URL.Path == "/readyz" || r.URL.Path == "/healthz"
		if s.draining.Load() && !probe {
			w.Header().Set("Connection", "close")
			oai.Errorf(http.StatusServiceUnavailable, oai.TypeServer, "the router is shutting down").Write(w)
			return
		}
		if !probe {
			s.drain.active.Add(1)
			defer s.drain.active.Add(-1)
		}
		next.ServeHTTP(w, r)
	})
}

// awaitIdle returns once no request is being served or ctx is done.
func (s *Server) awaitIdle(ctx context.Context) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for s.drain.active.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
