package frontend

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/prometheus/client_golang/prometheus"
)

// The engines' KV transfer protocols (vLLM's kv_transfer_params, SGLang's
// bootstrap fields; oai.EngineFields) are the router's alone: a client's
// are stripped from its request before any worker sees it, on every path
// (aggregated, both disaggregated hops, retries and the aggregated
// fallback all start from the stripped body). Stripped rather than
// refused: the fields are part of the engines' public request schema, so
// clients written against a bare engine, or passing a previous answer's
// kv_transfer_params back, send them without intent; served without them
// they get what they asked for, and the strip is counted
// (kvrouter_client_fields_stripped_total{field}).

// guardMetrics count what the frontend refused or dropped from clients
// and engines at its trust boundaries.
type guardMetrics struct {
	stripped      *prometheus.CounterVec // field
	prefillBad    prometheus.Counter
	slowClients   prometheus.Counter
	answerTooLong *prometheus.CounterVec // kind
}

func newGuardMetrics(reg prometheus.Registerer) *guardMetrics {
	m := &guardMetrics{
		stripped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_client_fields_stripped_total",
			Help: "Engine transfer fields removed from client requests (kv_transfer_params, bootstrap_host, bootstrap_port, bootstrap_room, vllm_xargs.kv_transfer_params): only the router sets them."}, []string{"field"}),
		prefillBad: prometheus.NewCounter(prometheus.CounterOpts{Name: "kvrouter_disagg_prefill_invalid_total",
			Help: "Prefill answers refused before the decode hop (kv_transfer_params missing, of the wrong type or size, or without the required fields): a prefill failure, retried on another prefill worker, then served aggregated."}),
		slowClients: prometheus.NewCounter(prometheus.CounterOpts{Name: "kvrouter_stream_write_timeouts_total",
			Help: "Answers cut because the client did not take a write within --stream-write-timeout (its engine request cancelled, its load released)."}),
		answerTooLong: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_engine_answer_too_large_total",
			Help: "Engine answers beyond --max-answer-bytes that the router would have buffered: kind folded (a non-streaming answer assembled from a stream: 502) or json (relayed unbuffered, its usage not read)."}, []string{"kind"}),
	}
	reg.MustRegister(m.stripped, m.prefillBad, m.slowClients, m.answerTooLong)
	return m
}

// stripEngineFields removes a client's engine fields from j.body (see
// above); e are the fields its parse found.
func (s *Server) stripEngineFields(j *job, e *oai.EngineFields) *oai.Error {
	if !e.Sent() {
		return nil
	}
	b, removed, err := oai.StripEngineFields(j.body)
	if err != nil {
		return oai.BadRequest("", err.Error())
	}
	if len(removed) == 0 {
		return nil
	}
	j.body = b
	for _, f := range removed {
		s.gm.stripped.WithLabelValues(f).Inc()
	}
	s.log.Debug("client engine fields stripped", "request_id", j.id, "fields", removed)
	return nil
}

// clientWriter is the client side of a relayed answer. Before each write
// and flush it sets the connection's write deadline Hardening.
// StreamWriteTimeout ahead, so a client that stops reading (or reads
// slower than a write's worth in that time) fails the write instead of
// holding the stream, its engine request and its load forever. Writes
// land in the kernel's socket buffer at once while the client keeps up:
// the deadline only fires on a connection that has stopped draining.
// NB: an idle gap between engine events is harmless over HTTP/1 (the next
// write re-arms the deadline); the server resets it after the handler.
type clientWriter struct {
	http.ResponseWriter
	rc       *http.ResponseController
	d        time.Duration
	err      error // the first write or flush error
	timedOut bool  // err was the write deadline
}

func newClientWriter(w http.ResponseWriter, d time.Duration) *clientWriter {
	return &clientWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: d}
}

func (c *clientWriter) arm() {
	if c.d > 0 {
		// ErrNotSupported (a writer without a connection, as in tests):
		// no deadline to set.
		_ = c.rc.SetWriteDeadline(time.Now().Add(c.d))
	}
}

func (c *clientWriter) note(err error) {
	if err != nil && c.err == nil {
		c.err, c.timedOut = err, errors.Is(err, os.ErrDeadlineExceeded)
	}
}

func (c *clientWriter) Write(b []byte) (int, error) {
	c.arm()
	n, err := c.ResponseWriter.Write(b)
	c.note(err)
	return n, err
}

// Flush sends what is buffered to the client; a failure is kept in err.
func (c *clientWriter) Flush() {
	c.arm()
	if err := c.rc.Flush(); !errors.Is(err, http.ErrNotSupported) {
		c.note(err)
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (c *clientWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// readAnswer reads r to its end if it holds at most limit bytes (<= 0: no
// bound); else it returns the first limit+1 bytes and errAnswerTooLarge,
// the rest left in r.
func readAnswer(r io.Reader, limit int64) ([]byte, error) {
	if limit <= 0 {
		return io.ReadAll(r)
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = errAnswerTooLarge
	}
	return b, err
}
