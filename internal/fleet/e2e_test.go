package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/fleet"
	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/prometheus/client_golang/prometheus"
)

const model = "kvrouter-mock"

type env struct {
	f       *fleet.Fleet
	events  chan uint64 // worker id of each applied KV event
	freed   chan string // request ids freed
	cancel  context.CancelFunc
	runDone chan error
}

func start(t *testing.T, direct bool, workers int, speedup float64, mod func(*frontend.Config)) *env {
	t.Helper()
	return startFleet(t, direct, workers, speedup, mod, nil)
}

// startFleet is start with fmod, when set, applied to the fleet's config.
func startFleet(t *testing.T, direct bool, workers int, speedup float64, mod func(*frontend.Config), fmod func(*fleet.Config)) *env {
	t.Helper()
	e := &env{events: make(chan uint64, 4096), freed: make(chan string, 1024), runDone: make(chan error, 1)}
	eng := mocker.DefaultConfig()
	eng.NumBlocks, eng.BlockSize, eng.SpeedupRatio = 4096, 16, speedup
	fc := frontend.DefaultConfig()
	fc.Seed = 1
	fc.LoadPollInterval = -1
	fc.DrainTimeout = 5 * time.Second
	fc.Events = frontend.Events{
		OnEvent: func(w uint64, err error) {
			if err == nil {
				select {
				case e.events <- w:
				default:
				}
			}
		},
		OnFree: func(id string, _ uint64) {
			select {
			case e.freed <- id:
			default:
			}
		},
	}
	if mod != nil {
		mod(&fc)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := fleet.Config{Workers: workers, Engine: eng, Frontend: fc, Direct: direct, Logger: log}
	if fmod != nil {
		fmod(&cfg)
	}
	f, err := fleet.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.f = f
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go func() { e.runDone <- f.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-e.runDone; err != nil {
			t.Errorf("fleet run: %v", err)
		}
	})
	select {
	case <-f.Ready():
	case err := <-e.runDone:
		e.runDone <- err
		t.Fatalf("fleet stopped before ready: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("fleet not ready after 30s")
	}
	return e
}

func (e *env) client(opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(e.f.URL() + "/v1/"),
		option.WithAPIKey("unused"), option.WithMaxRetries(0)}, opts...)...)
}

// waitEvents waits until the index received an event from worker w.
func (e *env) waitEvent(t *testing.T, w uint64) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case got := <-e.events:
			if got == w {
				return
			}
		case <-timeout:
			t.Fatalf("no KV event from worker %d", w)
		}
	}
}

func longPrompt(tag string, words int) string {
	var b strings.Builder
	for i := range words {
		fmt.Fprintf(&b, "%s-%d ", tag, i)
	}
	return b.String()
}

func TestOpenAIClient(t *testing.T) {
	e := start(t, true, 2, 100, nil)
	c := e.client()
	ctx := context.Background()

	var raw *http.Response
	comp, err := c.Completions.New(ctx, openai.CompletionNewParams{
		Model:     model,
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("Say hello")},
		MaxTokens: openai.Int(5),
	}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(comp.Choices) != 1 || comp.Choices[0].Text == "" || comp.Usage.CompletionTokens != 5 {
		t.Fatalf("completion = %+v", comp)
	}
	if raw.Header.Get(frontend.HeaderWorker) == "" {
		t.Error("no x-kvrouter-worker header")
	}

	stream := c.Completions.NewStreaming(ctx, openai.CompletionNewParams{
		Model:     model,
		Prompt:    openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: []int64{1, 2, 3, 4, 5}},
		MaxTokens: openai.Int(7),
	})
	n := 0
	for stream.Next() {
		n += len(stream.Current().Choices)
	}
	if err := stream.Err(); err != nil || n != 7 {
		t.Fatalf("streamed %d chunks, err %v", n, err)
	}

	chat, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:     model,
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hi")},
		MaxTokens: openai.Int(3),
	})
	if err != nil {
		t.Fatal(err)
	}
	if chat.Choices[0].Message.Content == "" || chat.Usage.CompletionTokens != 3 || chat.Usage.PromptTokens == 0 {
		t.Fatalf("chat = %+v", chat)
	}

	cs := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:         model,
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream please")},
		MaxTokens:     openai.Int(4),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	for cs.Next() {
		acc.AddChunk(cs.Current())
	}
	if err := cs.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].Message.Content == "" || acc.Usage.CompletionTokens != 4 {
		t.Fatalf("accumulated chat = %+v", acc.ChatCompletion)
	}

	models, err := c.Models.List(ctx)
	if err != nil || len(models.Data) != 1 || models.Data[0].ID != model {
		t.Fatalf("models = %+v, %v", models, err)
	}
}

// TestPrefixAffinityOverNATS runs the real event path: workers publish to
// embedded JetStream, the router consumes the stream.
// eventLagCount is the sample count of kvrouter_event_lag_seconds.
func eventLagCount(t *testing.T, reg *prometheus.Registry) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "kvrouter_event_lag_seconds" {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatal("kvrouter_event_lag_seconds not registered")
	return 0
}

func TestPrefixAffinityOverNATS(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := start(t, false, 3, 100, func(c *frontend.Config) { c.Registry = reg })
	// Each mocker's first event is AllBlocksCleared (its cache is empty at
	// start, as vLLM says after a restart): 3 lags before any request.
	eventplanetest.WaitFor(t, 10*time.Second, "the 3 start events' lags", func() bool { return eventLagCount(t, reg) == 3 })
	c := e.client()
	ctx := context.Background()
	prompt := longPrompt("shared-system-prompt", 300)

	var r1 *http.Response
	first, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: model,
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt + " question one")}, MaxTokens: openai.Int(2)},
		option.WithResponseInto(&r1))
	if err != nil {
		t.Fatal(err)
	}
	w1, _ := strconv.ParseUint(r1.Header.Get(frontend.HeaderWorker), 10, 64)
	if w1 == 0 {
		t.Fatalf("bad worker header %q", r1.Header.Get(frontend.HeaderWorker))
	}
	e.waitEvent(t, w1)
	// The lag is observed just after the event is applied.
	eventplanetest.WaitFor(t, 10*time.Second, "kvrouter_event_lag_seconds observed",
		func() bool { return eventLagCount(t, reg) > 3 })

	var r2 *http.Response
	second, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: model,
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt + " another question")}, MaxTokens: openai.Int(2)},
		option.WithResponseInto(&r2))
	if err != nil {
		t.Fatal(err)
	}
	if got := r2.Header.Get(frontend.HeaderWorker); got != strconv.FormatUint(w1, 10) {
		t.Fatalf("second request went to worker %s, first to %d", got, w1)
	}
	overlap, _ := strconv.Atoi(r2.Header.Get(frontend.HeaderOverlap))
	promptBlocks := int(second.Usage.PromptTokens) / 16
	if overlap < promptBlocks-2 || overlap == 0 {
		t.Fatalf("overlap %d blocks of %d", overlap, promptBlocks)
	}
	// The worker itself confirms the hit.
	if cached := second.Usage.PromptTokensDetails.CachedTokens; cached < int64(overlap*16) {
		t.Fatalf("worker cached %d tokens, router expected %d", cached, overlap*16)
	}
	if first.Usage.PromptTokensDetails.CachedTokens != 0 {
		t.Fatalf("first request reported cached tokens %d", first.Usage.PromptTokensDetails.CachedTokens)
	}
	rep := e.f.Frontend().IndexSummaries()
	for _, w := range rep.Workers {
		if (w.Worker == w1) != (w.Total > 0) {
			t.Errorf("index: worker %d holds %d blocks (served: %d)", w.Worker, w.Total, w1)
		}
	}
}

func TestClientDisconnectFreesLoad(t *testing.T) {
	e := start(t, true, 1, 1, nil)
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"model":"kvrouter-mock","prompt":"a long story","max_tokens":20000,"stream":true}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.f.URL()+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Header.Get(frontend.HeaderReqID)
	rd := oai.NewSSEReader(resp.Body, 0)
	if ev, err := rd.Next(); err != nil || len(ev.Data) == 0 {
		t.Fatalf("first event: %v", err)
	}
	rt := e.f.Frontend().Router()
	if st := rt.Stats(); st.Active != 1 {
		t.Fatalf("active requests %d while streaming, want 1", st.Active)
	}
	cancel()
	resp.Body.Close()
	freeTimeout := time.After(20 * time.Second)
	for freed := false; !freed; {
		select {
		case got := <-e.freed:
			freed = got == id
		case <-freeTimeout:
			t.Fatalf("request %s never freed", id)
		}
	}
	if st := rt.Stats(); st.Active != 0 {
		t.Fatalf("active requests %d after disconnect, want 0", st.Active)
	}
	// The worker dropped it too: its engine goes idle.
	w := e.f.Workers()[0]
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for st := w.Server().Stats(); st.Running+st.Waiting > 0; st = w.Server().Stats() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("worker still busy: %+v", st)
		}
	}
}

func TestKilledWorkerRetriesAndLeavesIndex(t *testing.T) {
	e := start(t, true, 2, 100, nil)
	prompt := longPrompt("kill", 200)
	post := func() (*http.Response, []byte) {
		resp, err := http.Post(e.f.URL()+"/v1/completions", "application/json",
			strings.NewReader(`{"prompt":"`+prompt+`","max_tokens":2}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	r1, _ := post()
	w1, _ := strconv.ParseUint(r1.Header.Get(frontend.HeaderWorker), 10, 64)
	if overlap := e.f.Frontend().IndexSummaries(); overlap.Workers[w1-1].Total == 0 {
		t.Fatalf("worker %d has no blocks in the index", w1)
	}
	e.f.KillWorker(int(w1 - 1))

	r2, b2 := post()
	if r2.StatusCode != http.StatusOK {
		t.Fatalf("after kill: %d %s", r2.StatusCode, b2)
	}
	if got := r2.Header.Get(frontend.HeaderWorker); got == strconv.FormatUint(w1, 10) || got == "" {
		t.Fatalf("retried request served by %q (killed %d)", got, w1)
	}
	for _, w := range e.f.Frontend().IndexSummaries().Workers {
		if w.Worker == w1 && (w.Total != 0 || !w.Down) {
			t.Fatalf("killed worker still in the index: %+v", w)
		}
	}
	// With every worker dead the client gets a clean OpenAI error.
	e.f.KillWorker(int(2 - w1))
	r3, b3 := post()
	oe, ok := oai.ParseError(r3.StatusCode, b3)
	if !ok || r3.StatusCode < 500 {
		t.Fatalf("all dead: %d %s", r3.StatusCode, b3)
	}
	if oe.Message == "" {
		t.Fatalf("empty error message: %s", b3)
	}
}

func TestAuthAndLimits(t *testing.T) {
	e := start(t, true, 1, 100, func(c *frontend.Config) {
		c.APIKeys = []string{"sk-good"}
		c.AdminKeys = []string{"sk-admin"}
		c.MaxPromptTokens = 50
		c.MaxBodyBytes = 4096
	})
	ctx := context.Background()
	bad := e.client()
	_, err := bad.Completions.New(ctx, openai.CompletionNewParams{Model: model,
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("hi")}, MaxTokens: openai.Int(1)})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong key: %v", err)
	}
	good := e.client(option.WithAPIKey("sk-good"))
	if _, err := good.Completions.New(ctx, openai.CompletionNewParams{Model: model,
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("hi")}, MaxTokens: openai.Int(1)}); err != nil {
		t.Fatalf("good key: %v", err)
	}
	_, err = good.Completions.New(ctx, openai.CompletionNewParams{Model: model,
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(longPrompt("x", 100))}, MaxTokens: openai.Int(1)})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != "context_length_exceeded" {
		t.Fatalf("long prompt: %v", err)
	}
	do := func(method, path, key, body string) int {
		req, _ := http.NewRequest(method, e.f.URL()+path, strings.NewReader(body))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	for _, tc := range []struct {
		method, path, key, body string
		want                    int
	}{
		{"POST", "/route", "", `{"prompt":"x"}`, 401},
		{"POST", "/route", "sk-good", `{"prompt":"x"}`, 200},
		{"GET", "/debug/index", "sk-good", "", 401},
		{"GET", "/debug/index", "sk-admin", "", 200},
		{"POST", "/v1/completions", "sk-good", `{"prompt":"` + strings.Repeat("y", 5000) + `"}`, 413},
		{"GET", "/healthz", "", "", 200},
		{"GET", "/readyz", "", "", 200},
	} {
		if got := do(tc.method, tc.path, tc.key, tc.body); got != tc.want {
			t.Errorf("%s %s key=%q: %d, want %d", tc.method, tc.path, tc.key, got, tc.want)
		}
	}
}

func TestRouteEndpoint(t *testing.T) {
	e := start(t, true, 3, 100, nil)
	resp, err := http.Post(e.f.URL()+"/route", "application/json", strings.NewReader(`{"tokens":[`+strings.Repeat("7,", 63)+`7]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rr frontend.RouteResponse
	if err := json.NewDecoder(resp.Body).Decode(&rr); err != nil {
		t.Fatal(err)
	}
	if len(rr.Candidates) != 3 || rr.Blocks != 4 || rr.Worker == 0 || rr.URL == "" {
		t.Fatalf("route = %+v", rr)
	}
	if st := e.f.Frontend().Router().Stats(); st.Active != 0 {
		t.Fatalf("untracked /route left %d active requests", st.Active)
	}
}

// TestGracefulShutdownDrainsStreams stops the fleet while a stream is in
// flight: the stream still completes.
func TestGracefulShutdownDrainsStreams(t *testing.T) {
	e := start(t, true, 1, 1, nil)
	resp, err := http.Post(e.f.URL()+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"drain me","max_tokens":40,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := oai.NewSSEReader(resp.Body, 0)
	if _, err := rd.Next(); err != nil {
		t.Fatal(err)
	}
	e.cancel() // begin shutdown with the stream mid-flight
	n, done := 1, false
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("stream cut after %d events: %v", n, err)
		}
		if ev.IsDone() {
			done = true
		} else {
			n++
		}
	}
	if n != 40 || !done {
		t.Fatalf("got %d events, done %v", n, done)
	}
	// New connections are refused once the listener closed.
	if err := <-e.runDone; err != nil {
		t.Fatal(err)
	}
	e.runDone <- nil
	if _, err := http.Post(e.f.URL()+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"late"}`)); err == nil {
		t.Fatal("request accepted after shutdown")
	}
}
