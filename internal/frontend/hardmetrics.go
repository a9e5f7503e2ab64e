package frontend

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"strings"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// CountWorkerRefused counts a refused worker registration by reason
// (kvrouter_workers_refused_total; discovery.Fleet.OnRefused).
func (s *Server) CountWorkerRefused(reason string) {
	s.m.workerRefused.WithLabelValues(reason).Inc()
}

// routeExtras adds the opt-in admin endpoints (Hardening.Pprof).
func (s *Server) routeExtras(mux *http.ServeMux, admin func(http.Handler) http.Handler) {
	if !s.cfg.Hardening.Pprof {
		return
	}
	mux.Handle("GET /debug/pprof/", admin(http.HandlerFunc(pprof.Index)))
	mux.Handle("GET /debug/pprof/cmdline", admin(http.HandlerFunc(pprof.Cmdline)))
	mux.Handle("GET /debug/pprof/profile", admin(http.HandlerFunc(pprof.Profile)))
	mux.Handle("GET /debug/pprof/symbol", admin(http.HandlerFunc(pprof.Symbol)))
	mux.Handle("GET /debug/pprof/trace", admin(http.HandlerFunc(pprof.Trace)))
}

// allowed lists the methods mux serves r's path with (other than through
// the catch-all), for a 405's Allow header; "" when none.
func allowed(mux *http.ServeMux, r *http.Request) string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := &http.Request{Method: m, URL: r.URL, Host: r.Host, Header: http.Header{}}
		if _, pattern := mux.Handler(probe); pattern != "/" && pattern != "" {
			out = append(out, m)
		}
	}
	return strings.Join(out, ", ")
}

// registerRuntime adds the Go runtime (go_*) and process (process_*)
// collectors to reg, unless reg has them already (a shared registry).
func registerRuntime(reg prometheus.Registerer) {
	for _, c := range []prometheus.Collector{collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				panic(err) // a programmer error: a conflicting collector
			}
		}
	}
}

// ErrRank is returned by Apply for an event of a dp rank beyond its
// registered worker's dp size: the router never routes to that rank, so
// its blocks could only fill the index.
var ErrRank = errors.New("frontend: dp rank beyond the worker's dp size")

// checkRank refuses (and counts) an event of a registered worker's rank
// beyond its dp size. Events of unregistered workers pass.
func (s *Server) checkRank(ev *kvevents.Event) error {
	w, ok := s.worker(ev.WorkerID)
	if !ok || int64(ev.DPRank) < int64(max(w.Info.DPSize, 1)) {
		return nil
	}
	s.m.eventRejects.WithLabelValues("dp_rank").Inc()
	s.log.Debug("KV event refused: dp rank beyond the worker's dp size", "worker", ev.WorkerID, "rank", ev.DPRank, "dp_size", w.Info.DPSize)
	return fmt.Errorf("%w: worker %d rank %d, dp size %d", ErrRank, ev.WorkerID, ev.DPRank, max(w.Info.DPSize, 1))
}

// ErrApplyPanic is returned by Apply when applying an event panicked (a
// bug reached by input): the event transport's goroutine, and with it the
// process, survives; the event is counted as rejected (reason "panic").
var ErrApplyPanic = errors.New("frontend: applying an event panicked")

func (s *Server) recoverApply(ev *kvevents.Event, err *error) {
	p := recover()
	if p == nil {
		return
	}
	s.m.eventRejects.WithLabelValues("panic").Inc()
	s.log.Error("KV event apply panicked; event dropped", "worker", ev.WorkerID, "event_id", ev.EventID, "panic", p)
	*err = fmt.Errorf("%w: worker %d event %d: %v", ErrApplyPanic, ev.WorkerID, ev.EventID, p)
}
