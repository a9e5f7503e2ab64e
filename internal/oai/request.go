package oai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
)

// Prompt is a completion prompt: text, or token ids (vLLM accepts a list of
// ints as `prompt`). Exactly one form is set after parsing.
type Prompt struct {
	Text     string
	Tokens   []uint32
	IsTokens bool
}

// UnmarshalJSON accepts a string, a list of ints, or a one-element list of
// either. Batched prompts (several prompts in one request) are refused.
func (p *Prompt) UnmarshalJSON(b []byte) error {
	return p.unmarshal(b, 0)
}

// unmarshal decodes a prompt nested depth lists deep: one wrapping list
// is accepted (["text"], [[ids]]), deeper nesting is refused at once
// rather than re-parsed level by level (quadratic in the body size).
func (p *Prompt) unmarshal(b []byte, depth int) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return fmt.Errorf("prompt: empty")
	}
	switch b[0] {
	case '"':
		p.IsTokens = false
		p.Tokens = nil
		return json.Unmarshal(b, &p.Text)
	case '[':
		if toks, ok := parseUintList(b); ok {
			if len(toks) == 0 {
				return fmt.Errorf("prompt: empty list")
			}
			p.Text, p.Tokens, p.IsTokens = "", toks, true
			return nil
		}
		if depth > 0 {
			return fmt.Errorf("prompt: nested lists (at most one level: [[ids]] or [\"text\"])")
		}
		if nestedTooDeep(b) {
			return fmt.Errorf("prompt: nested lists (at most one level: [[ids]] or [\"text\"])")
		}
		var raw []json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			return fmt.Errorf("prompt: %w", err)
		}
		if len(raw) == 0 {
			return fmt.Errorf("prompt: empty list")
		}
		first := bytes.TrimSpace(raw[0])
		if len(first) > 0 && (first[0] == '"' || first[0] == '[') {
			if len(raw) != 1 {
				return fmt.Errorf("prompt: batched prompts (%d) are not supported; send one prompt per request", len(raw))
			}
			return p.unmarshal(first, depth+1)
		}
		toks := make([]uint32, len(raw))
		for i, r := range raw {
			var f float64
			if err := json.Unmarshal(r, &f); err != nil {
				return fmt.Errorf("prompt[%d]: not a token id: %w", i, err)
			}
			if f < 0 || f > math.MaxUint32 || f != math.Trunc(f) {
				return fmt.Errorf("prompt[%d]: token id %v out of range", i, f)
			}
			toks[i] = uint32(f)
		}
		p.Text = ""
		p.Tokens = toks
		p.IsTokens = true
		return nil
	}
	return fmt.Errorf("prompt: must be a string or a list of token ids")
}

// nestedTooDeep reports whether b (a JSON list) opens three lists before
// anything else: [[[ is never a prompt.
func nestedTooDeep(b []byte) bool {
	n := 0
	for _, c := range b {
		switch c {
		case '[':
			if n++; n == 3 {
				return true
			}
		case ' ', '\t', '\n', '\r':
		default:
			return false
		}
	}
	return false
}

// parseUintList is the fast path for a token-id list: a JSON array of
// plain decimal integers that fit in uint32. ok is false for anything else
// (floats, exponents, nested lists, out-of-range values), which the caller
// then decodes the slow, general way. About 20x faster than decoding each
// element with encoding/json (BenchmarkParseCompletion).
func parseUintList(b []byte) ([]uint32, bool) {
	i, n := 1, len(b)
	skip := func() {
		for i < n && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
			i++
		}
	}
	skip()
	if i < n && b[i] == ']' {
		i++
		skip()
		return []uint32{}, i == n
	}
	toks := make([]uint32, 0, len(b)/6+1)
	for {
		skip()
		start := i
		var v uint64
		for i < n && b[i] >= '0' && b[i] <= '9' {
			v = v*10 + uint64(b[i]-'0')
			if v > math.MaxUint32 {
				return nil, false
			}
			i++
		}
		if i == start || (b[start] == '0' && i-start > 1) {
			return nil, false
		}
		toks = append(toks, uint32(v))
		skip()
		if i >= n {
			return nil, false
		}
		switch b[i] {
		case ',':
			i++
		case ']':
			i++
			skip()
			return toks, i == n
		default:
			return nil, false
		}
	}
}

// MarshalJSON writes the prompt in the form it was given.
func (p Prompt) MarshalJSON() ([]byte, error) {
	if p.IsTokens {
		if p.Tokens == nil {
			return []byte("[]"), nil
		}
		return json.Marshal(p.Tokens)
	}
	return json.Marshal(p.Text)
}

// StreamOptions are the OpenAI stream options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// CompletionRequest is a parsed /v1/completions request (the fields kvrouter
// uses; Raw keeps the whole body).
type CompletionRequest struct {
	Model         string         `json:"model"`
	Prompt        Prompt         `json:"prompt"`
	MaxTokens     *int           `json:"max_tokens"`
	Stream        bool           `json:"stream"`
	StreamOptions *StreamOptions `json:"stream_options"`
	N             *int           `json:"n"`
	// IgnoreEOS is vLLM's extension; the mocker always emits max tokens.
	IgnoreEOS bool `json:"ignore_eos"`
	// Temperature is only checked (a number >= 0, or null) and forwarded.
	Temperature *float64 `json:"temperature"`
	EngineFields

	Raw []byte `json:"-"`
}

// ChatMessageInput is a chat message as sent by clients: content is a
// string or a list of parts ({"type":"text","text":...}). Only text parts
// are understood: the content keeps the text before the first other part
// (image_url, input_audio, ...) and NonText is set.
type ChatMessageInput struct {
	Role    string `json:"role"`
	Content MessageContent
	Name    string `json:"name,omitempty"`
	// NonText: the content had a non-text part; Content is the text
	// before it.
	NonText bool `json:"-"`
}

// ErrNonTextPart is returned by MessageContent.UnmarshalJSON for content
// with a part other than text; the content holds the text before it.
var ErrNonTextPart = errors.New("oai: non-text content part")

// UnmarshalJSON decodes a message, flattening its content.
func (m *ChatMessageInput) UnmarshalJSON(b []byte) error {
	var w struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Name    string          `json:"name"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	m.Role, m.Name = w.Role, w.Name
	m.Content, m.NonText = "", false
	if len(w.Content) == 0 || string(w.Content) == "null" {
		return nil
	}
	err := m.Content.UnmarshalJSON(w.Content)
	if errors.Is(err, ErrNonTextPart) {
		m.NonText, err = true, nil
	}
	return err
}

// MarshalJSON writes role, content (as a string) and name.
func (m ChatMessageInput) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Role    string `json:"role"`
		Content string `json:"content"`
		Name    string `json:"name,omitempty"`
	}{m.Role, string(m.Content), m.Name})
}

// MessageContent is a message's text, flattened from a string or text parts.
type MessageContent string

// UnmarshalJSON accepts a string or a list of parts.
func (c *MessageContent) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = MessageContent(s)
		return nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(b, &parts); err != nil {
		return fmt.Errorf("content must be a string or a list of parts: %w", err)
	}
	var sb strings.Builder
	for i, p := range parts {
		if p.Type != "text" {
			*c = MessageContent(sb.String())
			return fmt.Errorf("%w: part %d has type %q", ErrNonTextPart, i, p.Type)
		}
		sb.WriteString(p.Text)
	}
	*c = MessageContent(sb.String())
	return nil
}

// ChatRequest is a parsed /v1/chat/completions request.
type ChatRequest struct {
	Model               string             `json:"model"`
	Messages            []ChatMessageInput `json:"messages"`
	MaxTokens           *int               `json:"max_tokens"`
	MaxCompletionTokens *int               `json:"max_completion_tokens"`
	Stream              bool               `json:"stream"`
	StreamOptions       *StreamOptions     `json:"stream_options"`
	N                   *int               `json:"n"`
	IgnoreEOS           bool               `json:"ignore_eos"`
	Temperature         *float64           `json:"temperature"` // checked, forwarded
	EngineFields

	Raw []byte `json:"-"`
}

// Limit returns the requested output token limit (max_completion_tokens
// wins over max_tokens), or 0 when none was given.
func (r *ChatRequest) Limit() int {
	if r.MaxCompletionTokens != nil {
		return *r.MaxCompletionTokens
	}
	if r.MaxTokens != nil {
		return *r.MaxTokens
	}
	return 0
}

// Limit returns max_tokens, or 0 when absent.
func (r *CompletionRequest) Limit() int {
	if r.MaxTokens != nil {
		return *r.MaxTokens
	}
	return 0
}

// IncludeUsage reports whether a streamed response should end with a usage chunk.
func (r *CompletionRequest) IncludeUsage() bool {
	return r.StreamOptions != nil && r.StreamOptions.IncludeUsage
}

// IncludeUsage reports whether a streamed response should end with a usage chunk.
func (r *ChatRequest) IncludeUsage() bool {
	return r.StreamOptions != nil && r.StreamOptions.IncludeUsage
}

// ParseCompletion parses and validates a /v1/completions body. Errors are
// *Error values with status 400.
func ParseCompletion(body []byte) (*CompletionRequest, error) {
	return parseCompletion(body, true)
}

// parseCompletion is ParseCompletion; fast enables decodeTokenLists (the
// tests compare both paths).
func parseCompletion(body []byte, fast bool) (*CompletionRequest, error) {
	var r CompletionRequest
	if !fast || !decodeTokenLists(body, &r) {
		if err := strictObject(body, &r); err != nil {
			return nil, err
		}
	}
	if !r.Prompt.IsTokens && r.Prompt.Text == "" && !hasKey(body, "prompt") {
		return nil, BadRequest("prompt", "missing required field \"prompt\"")
	}
	if r.Prompt.IsTokens && len(r.Prompt.Tokens) == 0 {
		return nil, BadRequest("prompt", "prompt must not be empty")
	}
	if err := checkCommon(r.MaxTokens, r.N); err != nil {
		return nil, err
	}
	if err := checkTemperature(r.Temperature); err != nil {
		return nil, err
	}
	r.Raw = body
	return &r, nil
}

// ParseChat parses and validates a /v1/chat/completions body.
func ParseChat(body []byte) (*ChatRequest, error) {
	var r ChatRequest
	if err := strictObject(body, &r); err != nil {
		return nil, err
	}
	if len(r.Messages) == 0 {
		return nil, BadRequest("messages", "messages must be a non-empty list")
	}
	for i, m := range r.Messages {
		if m.Role == "" {
			return nil, BadRequest(fmt.Sprintf("messages[%d].role", i), "message role is required")
		}
	}
	if err := checkCommon(r.MaxTokens, r.N); err != nil {
		return nil, err
	}
	if r.MaxCompletionTokens != nil && *r.MaxCompletionTokens < 1 {
		return nil, BadRequest("max_completion_tokens", "max_completion_tokens must be at least 1")
	}
	if err := checkTemperature(r.Temperature); err != nil {
		return nil, err
	}
	r.Raw = body
	return &r, nil
}

func checkCommon(maxTokens, n *int) *Error {
	if maxTokens != nil && *maxTokens < 1 {
		return BadRequest("max_tokens", "max_tokens must be at least 1")
	}
	if n != nil && *n != 1 {
		return BadRequest("n", "only n=1 is supported")
	}
	return nil
}

// checkTemperature: a temperature of the wrong type already failed to
// decode; a negative one is refused here (as vLLM does).
func checkTemperature(t *float64) *Error {
	if t != nil && *t < 0 {
		return BadRequest("temperature", "temperature must be a number >= 0")
	}
	return nil
}

func strictObject(body []byte, v any) error {
	t := bytes.TrimSpace(body)
	if len(t) == 0 || t[0] != '{' {
		return BadRequest("", "request body must be a JSON object")
	}
	if err := json.Unmarshal(t, v); err != nil {
		return &Error{Status: http.StatusBadRequest, Message: "invalid request body: " + err.Error(), Type: TypeInvalidRequest}
	}
	return nil
}

func hasKey(body []byte, key string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return false
	}
	_, ok := m[key]
	return ok
}

// SetFields returns body with the given top-level fields replaced (or
// added), every other field kept byte for byte. Values are marshaled with
// encoding/json.
func SetFields(body []byte, fields map[string]any) ([]byte, error) {
	return EditFields(body, func(m map[string]json.RawMessage) error {
		for k, v := range fields {
			b, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("oai: rewrite field %q: %w", k, err)
			}
			m[k] = b
		}
		return nil
	})
}

// EditFields decodes body's top-level object once, lets edit change its
// fields, and encodes it again: fields edit leaves alone are kept byte for
// byte. An error from edit is returned as it is.
func EditFields(body []byte, edit func(map[string]json.RawMessage) error) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("oai: rewrite body: %w", err)
	}
	if err := edit(m); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}
