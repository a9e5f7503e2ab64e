package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/kvrouter/kvrouter/tokenizer"
)

// Config configures a remote tokenizer.
type Config struct {
	// Endpoints are worker base URLs (e.g. "http://10.0.0.5:8000"), tried in
	// order. Required (at least one).
	Endpoints []string
	// Model is sent as "model". Required.
	Model string
	// Client performs the requests. Default (nil): http.DefaultClient; set
	// one with timeouts for production (each call is also bounded by ctx).
	Client *http.Client
	// Path is the tokenize path. Default (""): "/tokenize".
	Path string
}

// Validate reports every problem with cfg.
func (c Config) Validate() error {
	var errs []error
	if len(c.Endpoints) == 0 {
		errs = append(errs, errors.New("remote tokenizer: no endpoints"))
	}
	for _, e := range c.Endpoints {
		if !strings.HasPrefix(e, "http://") && !strings.HasPrefix(e, "https://") {
			errs = append(errs, fmt.Errorf("remote tokenizer: endpoint %q is not an http(s) URL", e))
		}
	}
	if c.Model == "" {
		errs = append(errs, errors.New("remote tokenizer: no model"))
	}
	return errors.Join(errs...)
}

// ErrStatus is matched (errors.Is) when a worker answers /tokenize with a
// non-2xx status; errors.As with *StatusError gives the status.
var ErrStatus = errors.New("remote tokenizer: bad status")

// StatusError is a non-2xx answer of a worker's /tokenize.
type StatusError struct {
	URL  string
	Code int
	// Body is the start of the answer (up to 512 bytes), trimmed.
	Body string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("POST %s: %d %s: %v", e.URL, e.Code, e.Body, ErrStatus)
}

// Is makes a StatusError match ErrStatus.
func (e *StatusError) Is(target error) bool { return target == ErrStatus }

// NotServed reports whether the status says the worker serves no such
// endpoint or request (404, 405, 501, or any other 4xx but 429), as
// opposed to a passing failure (429, 5xx) worth asking again.
func (e *StatusError) NotServed() bool {
	return e.Code == http.StatusNotImplemented || (e.Code >= 400 && e.Code < 500 && e.Code != http.StatusTooManyRequests)
}

// Tokenizer asks workers' /tokenize endpoint.
type Tokenizer struct {
	cfg    Config
	client *http.Client
}

var _ tokenizer.Tokenizer = (*Tokenizer)(nil)

// New returns a remote tokenizer; it does no I/O.
func New(cfg Config) (*Tokenizer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Path == "" {
		cfg.Path = "/tokenize"
	}
	cfg.Endpoints = append([]string(nil), cfg.Endpoints...)
	t := &Tokenizer{cfg: cfg, client: cfg.Client}
	if t.client == nil {
		t.client = http.DefaultClient
	}
	return t, nil
}

// Name implements [tokenizer.Tokenizer]: "remote:" + model.
func (t *Tokenizer) Name() string { return "remote:" + t.cfg.Model }

type completionReq struct {
	Model            string `json:"model"`
	Prompt           string `json:"prompt"`
	AddSpecialTokens bool   `json:"add_special_tokens"`
}

type chatReq struct {
	Model               string              `json:"model"`
	Messages            []tokenizer.Message `json:"messages"`
	AddGenerationPrompt bool                `json:"add_generation_prompt"`
	AddSpecialTokens    bool                `json:"add_special_tokens"`
}

type response struct {
	Count  int      `json:"count"`
	Tokens []uint32 `json:"tokens"`
}

// Encode implements [tokenizer.Tokenizer] (add_special_tokens=true, as
// vLLM's /v1/completions does).
func (t *Tokenizer) Encode(ctx context.Context, prompt string) ([]uint32, error) {
	return t.do(ctx, completionReq{Model: t.cfg.Model, Prompt: prompt, AddSpecialTokens: true})
}

// EncodeChat implements [tokenizer.Tokenizer]; the worker applies its own
// chat template.
func (t *Tokenizer) EncodeChat(ctx context.Context, msgs []tokenizer.Message, addGenerationPrompt bool) ([]uint32, error) {
	if msgs == nil {
		msgs = []tokenizer.Message{}
	}
	return t.do(ctx, chatReq{Model: t.cfg.Model, Messages: msgs, AddGenerationPrompt: addGenerationPrompt})
}

func (t *Tokenizer) do(ctx context.Context, req any) ([]uint32, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("remote tokenizer: %w", err)
	}
	var errs []error
	for _, ep := range t.cfg.Endpoints {
		ids, retry, err := t.try(ctx, strings.TrimRight(ep, "/")+t.cfg.Path, body)
		if err == nil {
			return ids, nil
		}
		errs = append(errs, err)
		if !retry || ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// try makes one request; retry reports whether the next endpoint may help.
func (t *Tokenizer) try(ctx context.Context, url string, body []byte) (ids []uint32, retry bool, err error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, false, fmt.Errorf("remote tokenizer: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := t.client.Do(hr)
	if err != nil {
		return nil, true, fmt.Errorf("remote tokenizer: POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, resp.StatusCode >= 500, &StatusError{URL: url, Code: resp.StatusCode, Body: string(bytes.TrimSpace(snippet))}
	}
	ids, err = decodeAnswer(resp.Body, maxAnswerBytes)
	if err != nil {
		return nil, true, fmt.Errorf("remote tokenizer: POST %s: %w", url, err)
	}
	return ids, false, nil
}

// maxAnswerBytes bounds a /tokenize answer read (8M token ids as JSON).
const maxAnswerBytes = 64 << 20

// decodeAnswer decodes a /tokenize answer of at most limit bytes (a
// longer one fails: it is cut there): its tokens, which must be present
// and match its count when it has one.
func decodeAnswer(r io.Reader, limit int64) ([]uint32, error) {
	var a response
	if err := json.NewDecoder(io.LimitReader(r, limit)).Decode(&a); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if a.Tokens == nil {
		return nil, errors.New("response has no tokens")
	}
	if a.Count != 0 && a.Count != len(a.Tokens) {
		return nil, fmt.Errorf("count %d != %d tokens", a.Count, len(a.Tokens))
	}
	return a.Tokens, nil
}
