package frontend

import (
	"errors"
	"net/http"
	"net/http/pprof"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// CountWorkerRefused counts a refused worker registration by reason
// (kvrouter_workers_refused_total; discovery.Fleet.OnRefused).
func (s *Server) CountWorkerRefused(reason string) {
	s.pool.CountRefused(reason)
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
