package mockerd

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/tokenizer"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// maxBody bounds request bodies (a 128k-token prompt as JSON ids is ~1 MB).
const maxBody = 32 << 20

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", s.handleCompletions)
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("POST /tokenize", s.handleTokenize)
	mux.HandleFunc("POST /kv/release", s.handleRelease)
	mux.HandleFunc("GET /load", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, s.LoadReport()) })
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	// vLLM's and SGLang's liveness path, which the router probes.
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *oai.Error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, oai.Errorf(http.StatusRequestEntityTooLarge, oai.TypeInvalidRequest, "request body too large")
		}
		return nil, oai.BadRequest("", "read body: "+err.Error())
	}
	return b, nil
}

func toMessages(in []oai.ChatMessageInput) []tokenizer.Message {
	out := make([]tokenizer.Message, len(in))
	for i, m := range in {
		out[i] = tokenizer.Message{Role: m.Role, Content: string(m.Content), Name: m.Name}
	}
	return out
}

// genRequest is a parsed request of either endpoint.
type genRequest struct {
	chat         bool
	model        string
	tokens       []uint32
	maxTokens    int
	stream       bool
	includeUsage bool
	kv           *oai.KVTransferParams // disaggregation (disagg.go)
	salt         string                // cache_salt (vLLM's): salts block 0
	lora         string                // LoRA adapter ("" = base model; lora.go)
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	body, e := readBody(w, r)
	if e != nil {
		e.Write(w)
		return
	}
	req, err := oai.ParseCompletion(body)
	if err != nil {
		writeErr(w, err)
		return
	}
	lora, e := s.checkModel(req.Model)
	if e != nil {
		e.Write(w)
		return
	}
	g := genRequest{model: req.Model, lora: lora, maxTokens: req.Limit(), stream: req.Stream, includeUsage: req.IncludeUsage()}
	if g.kv, err = oai.ParseKVTransferParams(body); err != nil {
		oai.BadRequest("kv_transfer_params", err.Error()).Write(w)
		return
	}
	if g.salt, err = oai.ParseCacheSalt(body); err != nil {
		writeErr(w, err)
		return
	}
	if req.Prompt.IsTokens {
		g.tokens = req.Prompt.Tokens
	} else {
		g.tokens, err = s.cfg.Tokenizer.Encode(r.Context(), req.Prompt.Text)
		if err != nil {
			oai.Errorf(http.StatusBadRequest, oai.TypeInvalidRequest, "tokenize: "+err.Error()).Write(w)
			return
		}
	}
	s.generate(w, r, g)
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	body, e := readBody(w, r)
	if e != nil {
		e.Write(w)
		return
	}
	req, err := oai.ParseChat(body)
	if err != nil {
		writeErr(w, err)
		return
	}
	lora, e := s.checkModel(req.Model)
	if e != nil {
		e.Write(w)
		return
	}
	toks, err := s.cfg.Tokenizer.EncodeChat(r.Context(), toMessages(req.Messages), true)
	if err != nil {
		oai.Errorf(http.StatusBadRequest, oai.TypeInvalidRequest, "chat template: "+err.Error()).Write(w)
		return
	}
	kv, err := oai.ParseKVTransferParams(body)
	if err != nil {
		oai.BadRequest("kv_transfer_params", err.Error()).Write(w)
		return
	}
	salt, err := oai.ParseCacheSalt(body)
	if err != nil {
		writeErr(w, err)
		return
	}
	s.generate(w, r, genRequest{chat: true, model: req.Model, tokens: toks, maxTokens: req.Limit(),
		stream: req.Stream, includeUsage: req.IncludeUsage(), kv: kv, salt: salt, lora: lora})
}

func writeErr(w http.ResponseWriter, err error) {
	var oe *oai.Error
	if errors.As(err, &oe) {
		oe.Write(w)
		return
	}
	oai.Errorf(http.StatusInternalServerError, oai.TypeServer, err.Error()).Write(w)
}

func (s *Server) generate(w http.ResponseWriter, r *http.Request, g genRequest) {
	if len(g.tokens) == 0 {
		oai.BadRequest("prompt", "prompt tokenizes to zero tokens").Write(w)
		return
	}
	if g.maxTokens == 0 {
		g.maxTokens = s.cfg.DefaultMaxTokens
	}
	// NB: "max > len - prompt", never a sum: max_tokens near 2^63 would
	// wrap it negative and admit an endless request.
	if g.maxTokens > s.cfg.MaxModelLen-len(g.tokens) {
		oai.BadRequest("max_tokens", "This model's maximum context length is "+strconv.Itoa(s.cfg.MaxModelLen)+
			" tokens. However, you requested "+strconv.FormatUint(uint64(len(g.tokens))+uint64(g.maxTokens), 10)+
			" tokens ("+strconv.Itoa(len(g.tokens))+" in the messages, "+strconv.Itoa(g.maxTokens)+" in the completion).").Write(w)
		return
	}
	if g.model == "" {
		g.model = s.cfg.Model
	}
	st := &stream{
		req:    mocker.Request{ID: s.nextID.Add(1), Tokens: g.tokens, MaxOutputTokens: g.maxTokens, CacheSalt: g.salt, LoRA: g.lora},
		notify: make(chan struct{}, 1),
	}
	applyKV(st, g.kv)
	ctx := r.Context()
	if err := s.submit(ctx, st); err != nil {
		switch {
		case errors.Is(err, mocker.ErrTooLong), errors.Is(err, mocker.ErrBadRequest):
			oai.BadRequest("prompt", err.Error()).Write(w)
		case ctx.Err() != nil:
		default:
			oai.Errorf(http.StatusServiceUnavailable, oai.TypeServer, err.Error()).Write(w)
		}
		return
	}
	s.m.requests.Inc()
	w.Header().Set("X-Kvrouter-Worker", strconv.FormatUint(s.cfg.Engine.Worker.ID, 10))
	e := &emitter{chat: g.chat, id: oai.ID(prefix(g.chat)+"-w"+strconv.FormatUint(s.cfg.Engine.Worker.ID, 10), st.req.ID), model: g.model, created: time.Now().Unix()}
	if g.stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
	}
	fl, _ := w.(http.Flusher)
	var buf []mocker.Output
	var text []byte
	for {
		select {
		case <-ctx.Done():
			s.cancel(st.req.ID)
			return
		case <-st.notify:
		}
		var res *mocker.Result
		buf, res = st.take(buf)
		if g.stream {
			for i := range buf {
				if err := e.chunk(w, buf[i]); err != nil {
					s.cancel(st.req.ID)
					return
				}
			}
			if fl != nil && len(buf) > 0 {
				fl.Flush()
			}
		} else {
			for i := range buf {
				text = append(text, TokenText(buf[i].Token)...)
			}
		}
		if res == nil {
			continue
		}
		usage := &oai.Usage{PromptTokens: len(g.tokens), CompletionTokens: res.OutputTokens,
			TotalTokens:         len(g.tokens) + res.OutputTokens,
			PromptTokensDetails: &oai.PromptTokensDetails{CachedTokens: res.CachedTokens}}
		if res.Cancelled {
			// Only when the loop stopped under us (shutdown).
			if !g.stream {
				oai.Errorf(http.StatusServiceUnavailable, oai.TypeServer, "worker shutting down").Write(w)
			}
			return
		}
		reportTransfer(w, st, res)
		if g.stream {
			if g.includeUsage {
				_ = e.usage(w, usage)
			}
			_ = oai.WriteEvent(w, oai.Done)
			if fl != nil {
				fl.Flush()
			}
			return
		}
		v := e.whole(string(text), usage)
		if p := s.transferParams(st); p != nil {
			v = withKV(v, p)
		}
		writeJSON(w, v)
		return
	}
}

// prefix starts a response id; the caller adds the worker id so that ids
// stay unique across a fleet (each engine numbers its requests from 1).
func prefix(chat bool) string {
	if chat {
		return "chatcmpl"
	}
	return "cmpl"
}

// handleTokenize is vLLM's /tokenize.
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	body, e := readBody(w, r)
	if e != nil {
		e.Write(w)
		return
	}
	var req oai.TokenizeRequest
	if err := json.Unmarshal(body, &req); err != nil {
		oai.BadRequest("", "invalid request body: "+err.Error()).Write(w)
		return
	}
	var toks []uint32
	var err error
	ctx := r.Context()
	if len(req.Messages) > 0 {
		gen := req.AddGenerationPrompt == nil || *req.AddGenerationPrompt
		toks, err = s.cfg.Tokenizer.EncodeChat(ctx, toMessages(req.Messages), gen)
	} else {
		toks, err = s.cfg.Tokenizer.Encode(ctx, req.Prompt)
	}
	if err != nil {
		oai.BadRequest("", "tokenize: "+err.Error()).Write(w)
		return
	}
	if toks == nil {
		toks = []uint32{}
	}
	writeJSON(w, oai.TokenizeResponse{Count: len(toks), MaxModelLen: s.cfg.MaxModelLen, Tokens: toks})
}
