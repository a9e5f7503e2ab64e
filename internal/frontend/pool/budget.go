package pool

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/kvrouter/kvrouter/internal/discovery"
)

// A worker's token budget per step (router.WorkerInfo.MaxNumBatchedTokens)
// comes, first found: from its registration (or --worker
// max-batched-tokens=, the pod annotation kvrouter.io/max-batched-tokens);
// from the engine where it says it; else Config.WorkerMaxBatchedTokens.
//
// Which engines say it: SGLang serves its server arguments at GET
// /get_server_info, chunked_prefill_size among them (the prefill tokens of
// one step; -1 or null with chunking off, when max_prefill_tokens bounds a
// step instead). vLLM does not: its /metrics carries the cache config
// (vllm:cache_config_info) but no scheduler config, and its
// /server_info exists only in its development mode. The
// llm-d-inference-sim follows vLLM.

// maxServerInfoBytes bounds the /get_server_info body read (it carries
// every server argument and each dp rank's internal state).
const maxServerInfoBytes = 4 << 20

// sglangBudget asks an SGLang worker's /get_server_info for its budget per
// step: chunked_prefill_size, else max_prefill_tokens; 0 when it says
// neither.
func (p *Pool) sglangBudget(ctx context.Context, base string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/get_server_info", nil)
	if err != nil {
		return 0, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return 0, fmt.Errorf("frontend: %s/get_server_info: %s", base, resp.Status)
	}
	return parseSGLangBudget(io.LimitReader(resp.Body, maxServerInfoBytes))
}

// parseSGLangBudget reads chunked_prefill_size (else max_prefill_tokens)
// from a /get_server_info body; 0 when neither is a positive size within
// discovery.MaxBatchedTokens.
func parseSGLangBudget(r io.Reader) (int, error) {
	var info struct {
		ChunkedPrefillSize *int64 `json:"chunked_prefill_size"`
		MaxPrefillTokens   *int64 `json:"max_prefill_tokens"`
	}
	if err := json.NewDecoder(r).Decode(&info); err != nil {
		return 0, fmt.Errorf("frontend: sglang server info: %w", err)
	}
	for _, v := range []*int64{info.ChunkedPrefillSize, info.MaxPrefillTokens} {
		if v != nil && *v > 0 && *v <= discovery.MaxBatchedTokens {
			return int(*v), nil
		}
	}
	return 0, nil
}

// learnBudget takes an SGLang worker's budget from the engine when its
// registration named none (once per worker): the fleet default is a guess,
// the engine's own setting is not.
func (p *Pool) learnBudget(ctx context.Context, w *Worker, h *workerHealth) {
	p.eng.mu.Lock()
	asked := h.budgetAsked
	h.budgetAsked = true
	p.eng.mu.Unlock()
	if asked {
		return
	}
	n, err := p.sglangBudget(ctx, w.URL)
	if err != nil || n == 0 {
		p.log.Info("SGLang worker's budget unknown; using the fleet's", "worker", w.ID,
			"max_batched_tokens", w.Info.MaxNumBatchedTokens, "err", err)
		return
	}
	p.mu.Lock()
	cur, ok := p.workers[w.ID]
	if !ok || !cur.FleetBudget {
		p.mu.Unlock()
		return
	}
	cur.Info.MaxNumBatchedTokens, cur.FleetBudget = n, false
	info, down := cur.Info, cur.down
	p.mu.Unlock()
	if !down {
		_ = p.rt.AddWorker(info) // in place: index and loads stay
	}
	p.log.Info("worker budget from the engine (SGLang chunked_prefill_size)", "worker", w.ID, "max_batched_tokens", n)
}
