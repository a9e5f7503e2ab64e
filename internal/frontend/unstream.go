package frontend

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"

	"github.com/kvrouter/kvrouter/internal/oai"
)

// Non-streaming requests are streamed from the engine (DESIGN.md §4
// prefill-done): the router asks for stream=true with
// stream_options.include_usage, so the first token marks the end of the
// request's prefill (its prefill load is released then, not at the end of
// the whole answer) and the final usage chunk carries the engine's
// cached_tokens. The client still gets one JSON body in OpenAI's
// non-streaming shape, assembled from the chunks by unstreamer.

// prepareUnstream rewrites a non-streaming completion or chat request to
// stream from the engine (stream true, stream_options.include_usage),
// decoding the body once. A body that cannot be rewritten or folded is
// forwarded as it is (the relay then copies the engine's JSON).
func (s *Server) prepareUnstream(j *job) {
	if j.stream || (j.endpoint != "completions" && j.endpoint != "chat") {
		return
	}
	b, err := oai.EditFields(j.body, func(m map[string]json.RawMessage) error {
		if !foldable(m) {
			return errNotFoldable
		}
		m["stream"], m["stream_options"] = json.RawMessage("true"), json.RawMessage(`{"include_usage":true}`)
		return nil
	})
	if err != nil {
		return
	}
	j.body, j.unstream = b, true
}

var errNotFoldable = errors.New("frontend: answer not foldable from chunks")

// foldable reports whether a non-streaming request's answer (its body's
// top-level fields) can be folded from chunks: requests for log
// probabilities or an echoed prompt are forwarded as they are (the folder
// does not rebuild those fields).
func foldable(m map[string]json.RawMessage) bool {
	for _, k := range []string{"logprobs", "top_logprobs", "prompt_logprobs", "echo", "best_of"} {
		if v, ok := m[k]; ok && string(v) != "null" && string(v) != "false" {
			return false
		}
	}
	return true
}

// unstreamer folds a chat or completion SSE stream into one response.
type unstreamer struct {
	chat    bool
	id      string
	created int64
	model   string
	usage   json.RawMessage
	choices map[int]*unChoice
	// extra are top-level fields other than the known ones, from the
	// first chunk that had them (system_fingerprint, kv_transfer_params).
	extra map[string]json.RawMessage
	// left is what the folded answer may still take, in chunk bytes
	// (Hardening.MaxAnswerBytes): everything folded comes from the chunks.
	left int64
	// total (nil: none) holds the folded bytes in the store of all
	// streams' buffers, within its byte bound.
	total *streamBuf
	// failed is the first error event of the stream ({"error": {...}}, as
	// vLLM and llm-d-inference-sim send a request they refuse after the
	// 200 of a stream); the client gets it as the engine's non-streaming
	// answer would be, with its code as the status.
	failed json.RawMessage
}

// maxFoldIndex bounds the choice and tool-call indices a folded answer
// takes from the engine: each index below it may allocate an entry.
const maxFoldIndex = 1024

// foldEntryCost is what a new choice or tool call costs the fold's byte
// budget (its allocations), so that indices cannot outgrow the bound.
const foldEntryCost = 256

// errAnswerTooLarge: an engine answer beyond what the router buffers.
var errAnswerTooLarge = errors.New("frontend: engine answer too large to buffer")

var errFoldTooLarge = fmt.Errorf("%w: folded answer beyond --max-answer-bytes", errAnswerTooLarge)

var errFoldTotal = fmt.Errorf("%w: stream buffers of all requests at --max-stream-buffer-bytes", errAnswerTooLarge)

type unChoice struct {
	text, reasoning []byte
	role            string
	finish          json.RawMessage
	stop            json.RawMessage
	tools           []*unTool
}

type unTool struct {
	ID, Type string
	Name     string
	Args     []byte
}

// newUnstreamer folds at most limit bytes of chunks (<= 0: no bound).
func newUnstreamer(chat bool, limit int64) *unstreamer {
	if limit <= 0 {
		limit = math.MaxInt64
	}
	return &unstreamer{chat: chat, choices: map[int]*unChoice{}, extra: map[string]json.RawMessage{}, left: limit}
}

// chunk is the part of a streamed chunk the unstreamer reads.
type chunk struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Usage   json.RawMessage `json:"usage"`
	Error   json.RawMessage `json:"error"`
	Choices []struct {
		Index        int             `json:"index"`
		Text         *string         `json:"text"`
		FinishReason json.RawMessage `json:"finish_reason"`
		StopReason   json.RawMessage `json:"stop_reason"`
		Delta        *struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			Reasoning *string `json:"reasoning_content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
	} `json:"choices"`
}

var knownChunkKeys = []string{"id", "object", "created", "model", "usage", "choices", "error"}

// add folds one data payload in.
func (u *unstreamer) add(data []byte) error {
	if u.left -= int64(len(data)); u.left < 0 {
		return errFoldTooLarge
	}
	if u.total != nil && !u.total.grow(int64(len(data))) {
		return errFoldTotal
	}
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("frontend: engine stream chunk: %w", err)
	}
	for _, ch := range c.Choices {
		if ch.Index < 0 || ch.Index >= maxFoldIndex {
			return fmt.Errorf("frontend: engine stream chunk: choice index %d out of [0, %d)", ch.Index, maxFoldIndex)
		}
		if ch.Delta == nil {
			continue
		}
		for _, tc := range ch.Delta.ToolCalls {
			if tc.Index < 0 || tc.Index >= maxFoldIndex {
				return fmt.Errorf("frontend: engine stream chunk: tool call index %d out of [0, %d)", tc.Index, maxFoldIndex)
			}
		}
	}
	if len(c.Error) > 0 && string(c.Error) != "null" && u.failed == nil {
		u.failed = c.Error
	}
	if u.id == "" {
		u.id, u.created, u.model = c.ID, c.Created, c.Model
	}
	if len(c.Usage) > 0 && string(c.Usage) != "null" {
		u.usage = c.Usage
	}
	var all map[string]json.RawMessage
	if json.Unmarshal(data, &all) == nil {
		for k, v := range all {
			if _, seen := u.extra[k]; !seen && !slices.Contains(knownChunkKeys, k) && string(v) != "null" {
				u.extra[k] = v
			}
		}
	}
	for _, ch := range c.Choices {
		x := u.choices[ch.Index]
		if x == nil {
			if u.left -= foldEntryCost; u.left < 0 {
				return errFoldTooLarge
			}
			if u.total != nil && !u.total.grow(foldEntryCost) {
				return errFoldTotal
			}
			x = &unChoice{}
			u.choices[ch.Index] = x
		}
		if ch.Text != nil {
			x.text = append(x.text, *ch.Text...)
		}
		if len(ch.FinishReason) > 0 && string(ch.FinishReason) != "null" {
			x.finish = ch.FinishReason
		}
		if len(ch.StopReason) > 0 && string(ch.StopReason) != "null" {
			x.stop = ch.StopReason
		}
		if d := ch.Delta; d != nil {
			if d.Role != "" {
				x.role = d.Role
			}
			if d.Content != nil {
				x.text = append(x.text, *d.Content...)
			}
			if d.Reasoning != nil {
				x.reasoning = append(x.reasoning, *d.Reasoning...)
			}
			for _, tc := range d.ToolCalls {
				if n := tc.Index + 1 - len(x.tools); n > 0 {
					if u.left -= int64(n) * foldEntryCost; u.left < 0 {
						return errFoldTooLarge
					}
				}
				for len(x.tools) <= tc.Index {
					x.tools = append(x.tools, &unTool{})
				}
				t := x.tools[tc.Index]
				t.ID = cmpOr(t.ID, tc.ID)
				t.Type = cmpOr(t.Type, tc.Type)
				t.Name += tc.Function.Name
				t.Args = append(t.Args, tc.Function.Arguments...)
			}
		}
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// body is the non-streaming response: OpenAI's text_completion or
// chat.completion object.
func (u *unstreamer) body() ([]byte, error) {
	out := map[string]any{}
	for k, v := range u.extra {
		out[k] = v
	}
	out["id"], out["created"], out["model"] = u.id, u.created, u.model
	if u.chat {
		out["object"] = "chat.completion"
	} else {
		out["object"] = "text_completion"
	}
	if len(u.usage) > 0 {
		out["usage"] = u.usage
	}
	idx := make([]int, 0, len(u.choices))
	for i := range u.choices {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	choices := make([]map[string]any, 0, len(idx))
	for _, i := range idx {
		x := u.choices[i]
		c := map[string]any{"index": i, "finish_reason": rawOrNull(x.finish), "logprobs": nil}
		if len(x.stop) > 0 {
			c["stop_reason"] = x.stop
		}
		if u.chat {
			msg := map[string]any{"role": cmpOr(x.role, "assistant"), "content": string(x.text)}
			if len(x.reasoning) > 0 {
				msg["reasoning_content"] = string(x.reasoning)
			}
			if len(x.tools) > 0 {
				var calls []map[string]any
				for _, t := range x.tools {
					calls = append(calls, map[string]any{"id": t.ID, "type": cmpOr(t.Type, "function"),
						"function": map[string]any{"name": t.Name, "arguments": string(t.Args)}})
				}
				msg["tool_calls"] = calls
				if len(x.text) == 0 {
					msg["content"] = nil
				}
			}
			c["message"] = msg
		} else {
			c["text"] = string(x.text)
		}
		choices = append(choices, c)
	}
	out["choices"] = choices
	return json.Marshal(out)
}

func rawOrNull(r json.RawMessage) any {
	if len(r) == 0 {
		return nil
	}
	return r
}

// writeUnstreamed answers the client with the folded body (the status
// line was held back until the stream ended).
func (s *Server) writeUnstreamed(w http.ResponseWriter, u *unstreamer, wid uint64, outcome, status *string) {
	if u.failed != nil {
		code := streamErrorStatus(u.failed)
		b, _ := json.Marshal(map[string]json.RawMessage{"error": u.failed})
		*outcome, *status = "worker_error", strconv.Itoa(code)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(code)
		if _, err := w.Write(b); err != nil {
			*outcome = "client_gone"
		}
		return
	}
	b, err := u.body()
	if err != nil {
		e := &oai.Error{Status: http.StatusBadGateway, Type: oai.TypeServer, Code: "worker_stream_error",
			Message: fmt.Sprintf("worker %d: %v", wid, err)}
		*outcome, *status = "upstream_error", strconv.Itoa(e.Status)
		e.Write(w)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(b); err != nil {
		*outcome = "client_gone"
	}
}

// streamErrorStatus is the HTTP status of a streamed error event: its
// "code" when that is an HTTP error status (vLLM's ErrorResponse), else
// 502 (the engine failed the request without saying how).
func streamErrorStatus(e json.RawMessage) int {
	var x struct {
		Code json.RawMessage `json:"code"`
	}
	if json.Unmarshal(e, &x) == nil {
		if c, err := strconv.Atoi(string(x.Code)); err == nil && c >= 400 && c <= 599 {
			return c
		}
	}
	return http.StatusBadGateway
}
