package frontend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
	"github.com/prometheus/client_golang/prometheus"
)

// Disaggregated prefill and decode (DESIGN.md §10), proxied with vLLM's
// NIXL-connector protocol (oai.KVTransferParams; the flow of vLLM's
// tests/v1/kv_connector/nixl_integration/toy_proxy_server.py):
//
//  1. router.Disaggregate decides (Router.Disagg.Policy); a fleet without a
//     prefill worker, or a request the conditional policy keeps together,
//     is proxied aggregated on a decode-capable worker (proxy.go).
//  2. Prefill hop: routed KV-aware over the prefill pool (request id
//     "<id>/prefill"); the client's body with max_tokens 1 (and
//     max_completion_tokens 1 if given), stream false, no stream_options,
//     min_tokens or min_completion_tokens, and kv_transfer_params
//     {"do_remote_decode": true, ...}; the same X-Request-Id as the decode
//     hop. Its load is released when its answer arrives. A prefill worker
//     that fails, times out (PrefillTimeout) or answers without valid
//     kv_transfer_params (oai.DecodePrefillAnswer: type, required fields,
//     size) is replaced by another prefill worker, up to Retries times;
//     then the request falls back to aggregated.
//  3. Decode hop: routed load-aware over the decode pool (overlap credit
//     for blocks the decode worker holds, the rest priced as a transfer);
//     the client's original body (less any engine fields of its own,
//     guard.go) with the prefill answer's checked kv_transfer_params,
//     streamed as the client asked.
//     A decode worker that cannot be reached or answers 5xx before any
//     token is replaced, with a fresh prefill hop (the first one's blocks
//     were never pulled), up to Retries times.
//
// The decode hop's time to first token is split into transfer and first
// decode pass when the decode engine reports its KV pull in the trailer
// oai.TrailerKVTransfer (the mocker does; vLLM does not: then
// decode_first keeps both). Trailers are not relayed to the client.
//
// The client sees X-Kvrouter-Prefill-Worker and
// X-Kvrouter-Prefill-Overlap-Blocks for the prefill hop beside the decode
// hop's X-Kvrouter-Worker and X-Kvrouter-Overlap-Blocks, and either a
// complete answer or one OpenAI-style error.
//
// SGLang's PD protocol (prefill and decode requests sent at once with a
// bootstrap host, port and room) is sglang.go, chosen per prefill worker.

// Response headers of the prefill hop.
const (
	HeaderPrefillWorker  = "X-Kvrouter-Prefill-Worker"
	HeaderPrefillOverlap = "X-Kvrouter-Prefill-Overlap-Blocks"
)

// maxPrefillAnswer bounds a prefill hop's answer (one token and the
// transfer parameters).
const maxPrefillAnswer = 1 << 20

// disaggMetrics are the disaggregation series (prefix kvrouter_disagg_).
type disaggMetrics struct {
	plans     *prometheus.CounterVec   // plan, reason
	hops      *prometheus.CounterVec   // hop
	phase     *prometheus.HistogramVec // phase
	transfer  prometheus.Counter
	bytes     prometheus.Counter
	fallbacks *prometheus.CounterVec // kind
}

func newDisaggMetrics(reg *prometheus.Registry) *disaggMetrics {
	m := &disaggMetrics{
		plans: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_disagg_plans_total",
			Help: "Disaggregation decisions (plan disaggregated or aggregated) by reason (router.Plan.Reason)."}, []string{"plan", "reason"}),
		hops: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_disagg_hop_decisions_total",
			Help: "Routing decisions of disaggregated requests by hop (prefill, decode)."}, []string{"hop"}),
		phase: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kvrouter_disagg_ttft_phase_seconds",
			Help:    "Time to first token of disaggregated requests split by phase: prefill (the prefill hop's round trip), transfer (the decode engine's KV pull, when it reports it in the trailer X-Kvrouter-Kv-Transfer-Seconds: kvrouter mockers do, vLLM does not) and decode_first (decode dispatch to first streamed token less the reported transfer: the first decode pass; KV transfer and first decode pass together when the engine reports no transfer).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18)}, []string{"phase"}),
		transfer: prometheus.NewCounter(prometheus.CounterOpts{Name: "kvrouter_disagg_transfer_blocks_total",
			Help: "Prompt blocks decode workers receive by KV transfer (full blocks they did not hold)."}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "kvrouter_disagg_transfer_bytes_total",
			Help: "KV bytes decode workers receive by transfer: transferred blocks * block size * Config.KVBytesPerToken."}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_disagg_fallbacks_total",
			Help: "Disaggregation faults: prefill_retry (another prefill worker), aggregated (prefill pool failed: served aggregated), decode_retry (another decode worker with a fresh prefill)."}, []string{"kind"}),
	}
	reg.MustRegister(m.plans, m.hops, m.phase, m.transfer, m.bytes, m.fallbacks)
	return m
}

// prefilled is a completed prefill hop (vLLM), or a chosen SGLang prefill
// server not yet sent the request (boot, sglang.go).
type prefilled struct {
	params json.RawMessage // the prefill answer's kv_transfer_params
	d      router.Decision
	boot   *Worker
	// h is the prefill booking: released when a vLLM prefill answered;
	// with boot, live until the SGLang prefill ends (sglangPrefill) or is
	// never sent (prefilled.drop).
	h *hold
}

// disagg serves j in two hops when the router disaggregates it; false
// means the caller serves it aggregated (no prefill pool, the conditional
// policy, or the prefill pool failed).
func (s *Server) disagg(w http.ResponseWriter, r *http.Request, j *job) bool {
	if !s.rt.HasPrefillPool() {
		return false
	}
	ctx := r.Context()
	req := router.Request{ID: j.id, Tokens: j.tokens, LoRA: j.lora, CacheSalt: j.salt}
	pl, err := s.rt.Disaggregate(&req, time.Now())
	if err != nil {
		return false // the aggregated path reports the bad request
	}
	if !pl.Disaggregate {
		s.dm.plans.WithLabelValues("aggregated", pl.Reason).Inc()
		return false
	}
	s.dm.plans.WithLabelValues("disaggregated", pl.Reason).Inc()
	var triedPrefill, triedDecode []uint64
	for attempt := 0; ; attempt++ {
		pre, err := s.prefillHop(ctx, j, &triedPrefill)
		if err != nil {
			if ctx.Err() != nil {
				s.m.request(j.endpoint, "499")
				return true
			}
			s.log.Warn("prefill pool failed: serving aggregated", "request_id", j.id, "err", err)
			s.dm.fallbacks.WithLabelValues("aggregated").Inc()
			return false
		}
		if !s.decodeHop(w, r, j, &pre, &triedDecode, &triedPrefill, attempt >= s.cfg.Retries) {
			return true
		}
		s.m.retries.Inc()
		s.dm.fallbacks.WithLabelValues("decode_retry").Inc()
	}
}

// prefillHop runs j's prefill on a prefill worker, trying others (not in
// *tried, which it extends) when one fails.
func (s *Server) prefillHop(ctx context.Context, j *job, tried *[]uint64) (prefilled, error) {
	pid := prefillID(j.id)
	if _, err := prefillBody(j.body); err != nil {
		return prefilled{}, err
	}
	for attempt := 0; ; attempt++ {
		d, err := s.routeHop(ctx, j, pid, router.HopPrefill, *tried)
		if err != nil {
			return prefilled{}, err
		}
		s.dm.hops.WithLabelValues("prefill").Inc()
		h := newHold(pid, s.rt, s.kickRelease) // takes over routeHop's booking
		wk, ok := s.pool.Get(d.Worker.ID)
		if !ok {
			h.fail(time.Now())
			*tried = append(*tried, d.Worker.ID)
			continue
		}
		if wk.BootstrapPort > 0 {
			// SGLang: sent together with the decode hop (sglang.go).
			return prefilled{d: d, boot: wk, h: h}, nil
		}
		t0 := time.Now()
		body, err := prefillBody(s.bodyFor(j, wk.ID))
		if err != nil {
			h.fail(time.Now())
			return prefilled{}, err
		}
		params, unreachable, err := s.postPrefill(ctx, wk, j, body)
		if err == nil {
			// The prefill answer arrived: its load leaves the prefill pool.
			h.free(time.Now())
			s.dm.phase.WithLabelValues("prefill").Observe(time.Since(t0).Seconds())
			return prefilled{params: params, d: d, h: h}, nil
		}
		h.fail(time.Now())
		if ctx.Err() != nil {
			return prefilled{}, ctx.Err()
		}
		s.log.Warn("prefill hop failed", "worker", wk.ID, "request_id", j.id, "err", err)
		if unreachable {
			s.pool.MarkDown(wk.ID)
		}
		if attempt >= s.cfg.Retries {
			return prefilled{}, err
		}
		s.dm.fallbacks.WithLabelValues("prefill_retry").Inc()
		*tried = append(*tried, wk.ID)
	}
}

// postPrefill sends the prefill request and returns the answer's
// kv_transfer_params; unreachable reports a connection failure (as
// opposed to a timeout or a bad answer).
func (s *Server) postPrefill(ctx context.Context, wk *Worker, j *job, body []byte) (params json.RawMessage, unreachable bool, err error) {
	pctx, cancel := context.WithTimeout(ctx, s.cfg.PrefillTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(pctx, http.MethodPost, wk.URL+j.path, bytes.NewReader(body))
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderReqID, j.id)
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, pctx.Err() == nil, fmt.Errorf("frontend: prefill on worker %d: %w", wk.ID, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxPrefillAnswer+1))
	if err != nil {
		return nil, false, fmt.Errorf("frontend: prefill on worker %d: %w", wk.ID, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, false, fmt.Errorf("frontend: prefill on worker %d: %s: %s", wk.ID, resp.Status, bytes.TrimSpace(b[:min(len(b), 512)]))
	}
	if len(b) > maxPrefillAnswer {
		err = fmt.Errorf("%w: answer longer than %d bytes", oai.ErrPrefillAnswer, maxPrefillAnswer)
	} else {
		params, err = oai.DecodePrefillAnswer(b)
	}
	if err != nil {
		// Never passed on: a decode worker would refuse it (the client
		// would get its 400) or act on what it was not meant to.
		s.gm.prefillBad.Inc()
		return nil, false, fmt.Errorf("frontend: prefill on worker %d: %w", wk.ID, err)
	}
	return params, false, nil
}

// decodeHop routes and proxies j's decode hop with the prefill's transfer
// parameters. It returns true when the caller should retry with a fresh
// prefill (the decode worker failed before answering; never when last),
// false when the client got its answer or an error.
func (s *Server) decodeHop(w http.ResponseWriter, r *http.Request, j *job, pre *prefilled, tried, triedPrefill *[]uint64, last bool) bool {
	ctx := r.Context()
	dj := *j
	var err error
	if pre.boot != nil {
		dj.body, err = sglangBody(j.body, pre.boot, newRoom())
	} else {
		dj.body, err = oai.SetFields(j.body, map[string]any{"kv_transfer_params": pre.params})
	}
	if err != nil {
		pre.drop(time.Now())
		s.fail(w, j.endpoint, oai.BadRequest("", err.Error()))
		return false
	}
	d, err := s.routeHop(ctx, &dj, j.id, router.HopDecode, *tried)
	if err != nil {
		pre.drop(time.Now())
		if n := len(*tried); n > 0 && ctx.Err() == nil {
			return s.failDecode(w, j, (*tried)[n-1], fmt.Errorf("no other decode worker left: %w", err))
		}
		s.fail(w, j.endpoint, routeError(err))
		return false
	}
	s.dm.hops.WithLabelValues("decode").Inc()
	f := s.newFlight(&dj, &d, nil)
	wk, ok := s.pool.Get(d.Worker.ID)
	if !ok {
		pre.drop(time.Now())
		f.abort(time.Now())
		*tried = append(*tried, d.Worker.ID)
		return !last || s.failDecode(w, j, d.Worker.ID, errors.New("removed"))
	}
	dctx, prefillFailed := ctx, func() bool { return false }
	if pre.boot != nil {
		var cancel context.CancelFunc
		dctx, cancel = context.WithCancel(ctx)
		defer cancel()
		var stop func()
		stop, prefillFailed = s.sglangPrefill(dctx, &dj, pre, cancel)
		defer stop()
	}
	t0 := time.Now()
	resp, err := s.forward(dctx, wk, &dj, d.Worker.Rank)
	if err == nil && resp.StatusCode >= http.StatusInternalServerError {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxPrefillAnswer))
		resp.Body.Close()
		err = fmt.Errorf("answered %s", resp.Status)
	} else if err != nil && dctx.Err() == nil {
		s.pool.MarkDown(wk.ID)
	}
	if err != nil {
		f.abort(time.Now())
		s.kickRelease()
		if ctx.Err() != nil {
			s.m.request(j.endpoint, "499")
			return false
		}
		if dctx.Err() != nil && prefillFailed() {
			// The SGLang prefill failed and cancelled this decode: the
			// decode worker is fine; retry with another prefill worker.
			*triedPrefill = append(*triedPrefill, pre.boot.ID)
			return !last || s.failDecode(w, j, wk.ID, errors.New("its prefill failed"))
		}
		s.log.Warn("decode hop failed", "worker", wk.ID, "request_id", j.id, "err", err)
		*tried = append(*tried, wk.ID)
		if last {
			return s.failDecode(w, j, wk.ID, err)
		}
		return true
	}
	s.dm.transfer.Add(float64(d.TransferBlocks))
	s.dm.bytes.Add(float64(int64(d.TransferBlocks) * int64(s.cfg.Router.BlockSize) * s.cfg.KVBytesPerToken))
	h := w.Header()
	h.Set(HeaderPrefillWorker, strconv.FormatUint(pre.d.Worker.ID, 10))
	h.Set(HeaderPrefillOverlap, strconv.Itoa(pre.d.Overlap[kvevents.TierDevice]))
	fw := &firstWrite{ResponseWriter: w}
	s.relay(fw, r, &dj, f, resp)
	s.observeDecodeFirst(resp, dj.stream, fw.at, t0)
	return false
}

// observeDecodeFirst observes the decode hop's phases once its answer was
// relayed to the end (trailers arrive after the body): transfer when the
// engine reported its KV pull (oai.TrailerKVTransfer, which kvrouter
// mockers send and vLLM does not), and decode_first, from dispatch t0 to
// the first streamed bytes first, less that transfer (clamped at 0: the
// engine's clock is not the router's). Without the report decode_first
// is the transfer and the first decode pass together.
func (s *Server) observeDecodeFirst(resp *http.Response, stream bool, first, t0 time.Time) {
	transfer, ok := 0.0, false
	if v := resp.Trailer.Get(oai.TrailerKVTransfer); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if ok = err == nil && f >= 0 && !math.IsInf(f, 0); ok {
			transfer = f
			s.dm.phase.WithLabelValues("transfer").Observe(f)
		}
	}
	if stream && !first.IsZero() {
		s.dm.phase.WithLabelValues("decode_first").Observe(max(0, first.Sub(t0).Seconds()-transfer))
	}
}

// drop releases an SGLang prefill hop's booking when its request
// is never sent (vLLM's was released when its answer arrived: a no-op).
func (p *prefilled) drop(now time.Time) { p.h.fail(now) }

// failDecode answers the client when no decode worker could take the
// request; it returns false (no retry).
func (s *Server) failDecode(w http.ResponseWriter, j *job, id uint64, err error) bool {
	s.fail(w, j.endpoint, &oai.Error{Status: http.StatusBadGateway, Type: oai.TypeServer, Code: "worker_unreachable",
		Message: fmt.Sprintf("decode worker %d failed: %v", id, err)})
	return false
}

// prefillBody is the prefill hop's body: the client's with max_tokens 1,
// stream false and kv_transfer_params do_remote_decode (vLLM's proxy).
func prefillBody(body []byte) ([]byte, error) {
	one := json.RawMessage("1")
	return oai.EditFields(body, func(m map[string]json.RawMessage) error {
		m["max_tokens"], m["stream"], m["kv_transfer_params"] = one, json.RawMessage("false"), oai.PrefillParams
		if _, ok := m["max_completion_tokens"]; ok {
			m["max_completion_tokens"] = one
		}
		for _, k := range []string{"stream_options", "min_tokens", "min_completion_tokens"} {
			delete(m, k)
		}
		return nil
	})
}

// firstWrite records when the first body bytes went to the client.
type firstWrite struct {
	http.ResponseWriter
	at time.Time
}

func (f *firstWrite) Write(b []byte) (int, error) {
	if f.at.IsZero() && len(b) > 0 {
		f.at = time.Now()
	}
	return f.ResponseWriter.Write(b)
}

// Flush passes through to the client connection.
func (f *firstWrite) Flush() { _ = f.FlushError() }

// FlushError is Flush with its error (http.ResponseController's).
func (f *firstWrite) FlushError() error { return http.NewResponseController(f.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the connection.
func (f *firstWrite) Unwrap() http.ResponseWriter { return f.ResponseWriter }
