package oai

import (
	"encoding/json"
	"strconv"
)

// Usage is the token accounting of a response. PromptTokensDetails carries
// the cached prompt tokens (prefix cache hits) the way vLLM reports them.
type Usage struct {
	PromptTokens        int                  `json:"prompt_tokens"`
	CompletionTokens    int                  `json:"completion_tokens"`
	TotalTokens         int                  `json:"total_tokens"`
	PromptTokensDetails *PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
}

// PromptTokensDetails breaks prompt tokens down.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// Cached returns the cached prompt tokens, 0 when not reported.
func (u *Usage) Cached() int {
	if u == nil || u.PromptTokensDetails == nil {
		return 0
	}
	return u.PromptTokensDetails.CachedTokens
}

// CompletionChoice is one choice of a /v1/completions response or chunk.
type CompletionChoice struct {
	Index        int             `json:"index"`
	Text         string          `json:"text"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

// Completion is a /v1/completions response (Object "text_completion"); the
// same shape is used for streamed chunks.
type Completion struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []CompletionChoice `json:"choices"`
	Usage   *Usage             `json:"usage,omitempty"`
	// KVTransferParams: a disaggregated prefill's answer (kvtransfer.go).
	KVTransferParams *KVTransferParams `json:"kv_transfer_params,omitempty"`
}

// ChatMessage is one message of a chat request or response. Content may be
// a string or a list of parts on input; Text holds the flattened text.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatChoice is one choice of a non-streamed chat response.
type ChatChoice struct {
	Index        int             `json:"index"`
	Message      ChatMessage     `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

// ChatCompletion is a /v1/chat/completions response.
type ChatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"` // "chat.completion"
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []ChatChoice `json:"choices"`
	Usage   *Usage       `json:"usage,omitempty"`
	// KVTransferParams: a disaggregated prefill's answer (kvtransfer.go).
	KVTransferParams *KVTransferParams `json:"kv_transfer_params,omitempty"`
}

// ChatDelta is the incremental message of a streamed chat chunk.
type ChatDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

// ChatChunkChoice is one choice of a streamed chat chunk.
type ChatChunkChoice struct {
	Index        int             `json:"index"`
	Delta        ChatDelta       `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

// ChatChunk is one streamed chat event (Object "chat.completion.chunk").
type ChatChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []ChatChunkChoice `json:"choices"`
	Usage   *Usage            `json:"usage,omitempty"`
}

// Model is one entry of /v1/models.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // "model"
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	// MaxModelLen is vLLM's extension; 0 omits it.
	MaxModelLen int `json:"max_model_len,omitempty"`
	// Root and Parent are vLLM's: a LoRA adapter's entry names its base
	// model in Parent (the router learns adapters from it); "" omits them.
	Root   string `json:"root,omitempty"`
	Parent string `json:"parent,omitempty"`
}

// ModelList is the /v1/models response.
type ModelList struct {
	Object string  `json:"object"` // "list"
	Data   []Model `json:"data"`
}

// TokenizeRequest is vLLM's /tokenize request: either Prompt or Messages.
type TokenizeRequest struct {
	Model               string             `json:"model,omitempty"`
	Prompt              string             `json:"prompt,omitempty"`
	Messages            []ChatMessageInput `json:"messages,omitempty"`
	AddSpecialTokens    *bool              `json:"add_special_tokens,omitempty"`
	AddGenerationPrompt *bool              `json:"add_generation_prompt,omitempty"`
}

// TokenizeResponse is vLLM's /tokenize response.
type TokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []uint32 `json:"tokens"`
}

// Finish reasons.
const (
	FinishStop   = "stop"
	FinishLength = "length"
)

// StrPtr returns a pointer to s (for FinishReason and delta content).
func StrPtr(s string) *string { return &s }

// ID formats a response id with a prefix, e.g. ID("cmpl", 7) = "cmpl-7".
func ID(prefix string, n uint64) string { return prefix + "-" + strconv.FormatUint(n, 10) }
