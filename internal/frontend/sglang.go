package frontend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/kvrouter/kvrouter/internal/oai"
)

// SGLang's PD protocol (DESIGN.md §10), chosen per prefill worker: one
// registered with a bootstrap port (Worker.BootstrapPort, --worker
// ...,bootstrap-port=N) is an SGLang prefill server. Unlike vLLM's
// two-step flow, the router picks both hops first, adds bootstrap_host
// (the prefill server's host), bootstrap_port and a random bootstrap_room
// to the client's request, and sends that same request to the prefill and
// the decode server at once (the shape of SGLang Model Gateway's PD
// router, as its documentation and SGLang's pd_disaggregation docs
// describe it); the engines meet in the room and the prefill pushes the KV
// to the decode. The decode server's answer is relayed; the prefill's is
// read and dropped, and releases the prefill booking. A prefill that fails
// cancels the decode request, which is then retried with a fresh prefill
// (disagg.go's retry loop).
//
// NB: the mocker speaks only vLLM's protocol; the SGLang flow is tested
// against fake SGLang servers.

// sglangBody is body with the bootstrap fields of prefill worker p.
func sglangBody(body []byte, p *Worker, room uint64) ([]byte, error) {
	u, err := url.Parse(p.URL)
	if err != nil {
		return nil, fmt.Errorf("frontend: prefill worker %d url: %w", p.ID, err)
	}
	host := u.Hostname()
	return oai.SetFields(body, map[string]any{"bootstrap_host": host, "bootstrap_port": p.BootstrapPort, "bootstrap_room": room})
}

// newRoom draws a bootstrap room. SGLang's router draws them at random
// too; they only need to be unique among requests in flight.
func newRoom() uint64 { return rand.Uint64() >> 1 } // fits an int64 for engines that parse it so

// sglangPrefill sends j's request (already with its bootstrap fields) to
// the prefill server in the background and returns a stop function that
// cancels it if still running and waits for it. When the prefill fails,
// it calls cancelDecode; failed reports that afterwards.
func (s *Server) sglangPrefill(ctx context.Context, j *job, pre *prefilled, cancelDecode context.CancelFunc) (stop func(), failed func() bool) {
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var bad bool
	go func() {
		defer close(done)
		t0 := time.Now()
		unreachable, err := s.postDiscard(pctx, pre.boot, j)
		if err == nil {
			pre.h.free(time.Now())
			s.dm.phase.WithLabelValues("prefill").Observe(time.Since(t0).Seconds())
			return
		}
		pre.h.fail(time.Now())
		if pctx.Err() != nil {
			return // the decode ended first (or the client left)
		}
		bad = true
		s.log.Warn("sglang prefill failed", "worker", pre.boot.ID, "request_id", j.id, "err", err)
		if unreachable {
			s.pool.MarkDown(pre.boot.ID)
		}
		cancelDecode()
	}()
	return func() { cancel(); <-done }, func() bool { <-done; return bad }
}

// postDiscard sends j to w and reads the answer to its end.
func (s *Server) postDiscard(ctx context.Context, w *Worker, j *job) (unreachable bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL+j.path, bytes.NewReader(s.bodyFor(j, w.ID)))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderReqID, j.id)
	resp, err := s.client.Do(req)
	if err != nil {
		var op *net.OpError
		return ctx.Err() == nil && errors.As(err, &op), fmt.Errorf("frontend: sglang prefill on worker %d: %w", w.ID, err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return false, fmt.Errorf("frontend: sglang prefill on worker %d: %w", w.ID, err)
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("frontend: sglang prefill on worker %d: %s", w.ID, resp.Status)
	}
	return false, nil
}
