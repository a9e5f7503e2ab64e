package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/internal/progress"
	"github.com/kvrouter/kvrouter/trace"
)

// Config configures one replay.
type Config struct {
	// URL is the endpoint's base URL, e.g. "http://127.0.0.1:8080". Required.
	URL string
	// Model is sent as "model". Default "kvrouter-mock".
	Model string
	// APIKey is sent as a bearer token when set.
	APIKey string
	// Records is the trace to replay (see trace.ReadFile). Required.
	Records []trace.Record
	// Limit replays only the first Limit records. Default 0 = all.
	Limit int
	// Pacer says when requests are sent. Default Unpaced.
	Pacer Pacer
	// TokensPerID is the number of tokens each trace hash id becomes.
	// Default trace.TraceBlockTokens (512).
	TokensPerID int
	// VocabSize, when > 0, maps synthesized token ids into [0, VocabSize)
	// (h mod VocabSize) for engines that check ids against a vocabulary.
	VocabSize int
	// MaxOutputTokens caps each request's output (0 = the trace's).
	MaxOutputTokens int
	// Concurrency bounds requests in flight. Default 1024.
	Concurrency int
	// Timeout bounds one request. Default 10 min.
	Timeout time.Duration
	// Client performs the requests. Default: a keep-alive client sized to
	// Concurrency.
	Client *http.Client
	// Progress receives the run's progress (package progress: a bar on a
	// terminal, a line per quarter otherwise; nil = none).
	Progress io.Writer
	// Label names the run in reports (e.g. the policy). Optional.
	Label string
}

// Report is what a replay measured.
type Report struct {
	Label    string  `json:"label,omitempty"`
	URL      string  `json:"url"`
	Pacer    string  `json:"pacer"`
	Requests int     `json:"requests"`
	OK       int     `json:"ok"`
	Errors   int     `json:"errors"`
	Seconds  float64 `json:"seconds"`
	// ErrorKinds counts errors by kind ("http_503", "connect", "stream", ...).
	ErrorKinds map[string]int `json:"error_kinds,omitempty"`
	TTFT       Dist           `json:"ttft"`
	// ITL is over requests of two or more text chunks, each one's mean
	// inter-token latency: (last chunk - first chunk) / (chunks - 1).
	// NB: not over every gap between chunks: under CPU load (replay
	// --compare runs the fleet on the client's cores) the stream stack
	// delivers chunks in bursts the client reads at once, and ~half the
	// gaps were under 50us, a p50 of 0.0ms beside 5ms-long passes.
	ITL Dist `json:"itl"`
	E2E Dist `json:"e2e"`
	// Throughput of completed requests.
	RequestsPerSec     float64 `json:"requests_per_sec"`
	OutputTokensPerSec float64 `json:"output_tokens_per_sec"`
	PromptTokens       int64   `json:"prompt_tokens"`
	OutputTokens       int64   `json:"output_tokens"`
	// CachedTokens are the prompt tokens workers reported as prefix-cache
	// hits; WorkerHitRate = CachedTokens / PromptTokens.
	CachedTokens  int64   `json:"cached_tokens"`
	WorkerHitRate float64 `json:"worker_hit_rate"`
	// RouterHitRate is the router's expected block hit rate over the run,
	// from kvrouter's /metrics (kvrouter_overlap_blocks_total /
	// kvrouter_prompt_blocks_total); -1 when the endpoint is not kvrouter.
	RouterHitRate float64 `json:"router_hit_rate"`
	// PerWorker counts requests by the x-kvrouter-worker response header.
	PerWorker map[string]int `json:"per_worker,omitempty"`

	ttfts, itls, e2es []time.Duration
	ttftRaw           []time.Duration // unsorted copy for charts
}

// TTFTs returns every request's time to first token, sorted.
func (r *Report) TTFTs() []time.Duration { return r.ttftRaw }

type result struct {
	ttft, e2e   time.Duration
	chunks      int           // stream chunks that carried text
	itl         time.Duration // mean gap between them (chunks > 1)
	prompt, out int
	cached      int
	worker      string
	errKind     string
}

// Run replays cfg.Records against cfg.URL and reports. It returns early,
// with the partial report and ctx's error, when ctx is done.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.URL == "" || len(cfg.Records) == 0 {
		return Report{}, errors.New("replay: URL and Records are required")
	}
	if err := cfg.Pacer.Validate(); err != nil {
		return Report{}, err
	}
	if cfg.Model == "" {
		cfg.Model = "kvrouter-mock"
	}
	if cfg.TokensPerID <= 0 {
		cfg.TokensPerID = trace.TraceBlockTokens
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1024
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Transport: &http.Transport{MaxIdleConns: cfg.Concurrency,
			MaxIdleConnsPerHost: cfg.Concurrency, DisableCompression: true}}
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	recs := cfg.Records
	if cfg.Limit > 0 && cfg.Limit < len(recs) {
		recs = recs[:cfg.Limit]
	}
	rep := Report{Label: cfg.Label, URL: cfg.URL, Pacer: cfg.Pacer.String(), Requests: len(recs),
		ErrorKinds: map[string]int{}, PerWorker: map[string]int{}, RouterHitRate: -1}
	before, isKV := scrapeHits(ctx, cfg)

	bar := progress.New(cfg.Progress, int64(len(recs)), strings.TrimSpace("replay "+cfg.Label))
	results := make(chan result, 256)
	sem := make(chan struct{}, cfg.Concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	t0 := recs[0].Timestamp
	timer := time.NewTimer(0)
	<-timer.C
	collectDone := make(chan struct{})
	go func() {
		defer close(collectDone)
		for r := range results {
			rep.add(&r)
			bar.Add(1)
		}
	}()
	var runErr error
loop:
	for i := range recs {
		if d := time.Until(start.Add(cfg.Pacer.At(i, &recs[i], t0))); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				timer.Stop()
				runErr = ctx.Err()
				break loop
			case <-timer.C:
			}
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			runErr = ctx.Err()
			break loop
		}
		wg.Add(1)
		go func(rec *trace.Record) {
			defer wg.Done()
			defer func() { <-sem }()
			results <- send(ctx, &cfg, rec)
		}(&recs[i])
	}
	wg.Wait()
	close(results)
	<-collectDone
	bar.Finish()
	rep.Seconds = time.Since(start).Seconds()
	rep.finish()
	if isKV {
		if after, ok := scrapeHits(context.WithoutCancel(ctx), cfg); ok && after[1] > before[1] {
			rep.RouterHitRate = (after[0] - before[0]) / (after[1] - before[1])
		}
	}
	return rep, runErr
}

func (r *Report) add(x *result) {
	if x.errKind != "" {
		r.Errors++
		r.ErrorKinds[x.errKind]++
		return
	}
	r.OK++
	r.ttfts = append(r.ttfts, x.ttft)
	r.e2es = append(r.e2es, x.e2e)
	if x.chunks > 1 {
		r.itls = append(r.itls, x.itl)
	}
	r.PromptTokens += int64(x.prompt)
	r.OutputTokens += int64(x.out)
	r.CachedTokens += int64(x.cached)
	if x.worker != "" {
		r.PerWorker[x.worker]++
	}
}

func (r *Report) finish() {
	r.TTFT, r.ITL, r.E2E = Summarize(r.ttfts), Summarize(r.itls), Summarize(r.e2es)
	r.ttftRaw = r.ttfts
	if r.Seconds > 0 {
		r.RequestsPerSec = float64(r.OK) / r.Seconds
		r.OutputTokensPerSec = float64(r.OutputTokens) / r.Seconds
	}
	if r.PromptTokens > 0 {
		r.WorkerHitRate = float64(r.CachedTokens) / float64(r.PromptTokens)
	}
}

type completionBody struct {
	Model         string            `json:"model"`
	Prompt        []uint32          `json:"prompt"`
	MaxTokens     int               `json:"max_tokens"`
	Stream        bool              `json:"stream"`
	StreamOptions oai.StreamOptions `json:"stream_options"`
	IgnoreEOS     bool              `json:"ignore_eos"`
}

func send(ctx context.Context, cfg *Config, rec *trace.Record) (res result) {
	toks := trace.Tokens(nil, rec, cfg.TokensPerID)
	if cfg.VocabSize > 0 {
		for i := range toks {
			toks[i] %= uint32(cfg.VocabSize)
		}
	}
	out := max(rec.OutputLength, 1)
	if cfg.MaxOutputTokens > 0 {
		out = min(out, cfg.MaxOutputTokens)
	}
	body, _ := json.Marshal(completionBody{Model: cfg.Model, Prompt: toks, MaxTokens: out, Stream: true,
		StreamOptions: oai.StreamOptions{IncludeUsage: true}, IgnoreEOS: true})
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		res.errKind = "request"
		return res
	}
	req.Header.Set("Content-Type", "application/json")
	if cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	t0 := time.Now()
	resp, err := cfg.Client.Do(req)
	if err != nil {
		res.errKind = "connect"
		if ctx.Err() != nil {
			res.errKind = "timeout"
		}
		return res
	}
	defer resp.Body.Close()
	res.worker = resp.Header.Get("X-Kvrouter-Worker")
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		res.errKind = "http_" + strconv.Itoa(resp.StatusCode)
		return res
	}
	rd := oai.NewSSEReader(resp.Body, 0)
	defer rd.Close()
	var first, last time.Time
	for {
		ev, err := rd.Next()
		if len(ev.Data) > 0 && !ev.IsDone() {
			now := time.Now()
			var c oai.Completion
			if json.Unmarshal(ev.Data, &c) != nil {
				if _, ok := oai.ParseError(0, ev.Data); ok {
					res.errKind = "stream_error"
					return res
				}
			}
			if len(c.Choices) > 0 && c.Choices[0].Text != "" {
				if res.chunks == 0 {
					res.ttft, first = now.Sub(t0), now
				}
				last = now
				res.chunks++
				res.out++
			}
			if c.Usage != nil {
				res.prompt = c.Usage.PromptTokens
				res.cached = c.Usage.Cached()
				if c.Usage.CompletionTokens > res.out {
					res.out = c.Usage.CompletionTokens
				}
			}
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, io.EOF) {
			res.errKind = "stream"
			return res
		}
		break
	}
	if res.out == 0 {
		res.errKind = "empty"
		return res
	}
	if res.prompt == 0 {
		res.prompt = len(toks)
	}
	res.e2e = time.Since(t0)
	if res.chunks > 1 {
		res.itl = last.Sub(first) / time.Duration(res.chunks-1)
	}
	return res
}

// scrapeHits reads kvrouter_overlap_blocks_total and
// kvrouter_prompt_blocks_total from URL/metrics; ok is false when the
// endpoint does not expose them (not kvrouter).
func scrapeHits(ctx context.Context, cfg Config) (v [2]float64, ok bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.URL+"/metrics", nil)
	if err != nil {
		return v, false
	}
	if cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	resp, err := cfg.Client.Do(req)
	if err != nil {
		return v, false
	}
	defer resp.Body.Close()
	found := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for i, name := range []string{"kvrouter_overlap_blocks_total ", "kvrouter_prompt_blocks_total "} {
			if s, cut := strings.CutPrefix(line, name); cut {
				if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
					v[i] = f
					found++
				}
			}
		}
	}
	return v, found == 2
}

// String is a one-line summary.
func (r *Report) String() string {
	return fmt.Sprintf("%s: %d/%d ok, ttft p50 %.0fms p99 %.0fms, itl p50 %.1fms, e2e p50 %.0fms, %.2f req/s, router hit %.1f%%, worker hit %.1f%%",
		r.Label, r.OK, r.Requests, r.TTFT.P50, r.TTFT.P99, r.ITL.P50, r.E2E.P50, r.RequestsPerSec,
		100*r.RouterHitRate, 100*r.WorkerHitRate)
}
