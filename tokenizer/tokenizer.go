package tokenizer

import (
	"context"
	"errors"
)

// Tokenizer turns completion prompts and chat conversations into the token
// ids the model's engine would compute for them. Implementations must be safe
// for concurrent use.
type Tokenizer interface {
	// Name identifies the tokenizer (model directory or encoding name).
	Name() string
	// Encode tokenizes a completion prompt the way vLLM does for
	// /v1/completions: HF tokenizer(prompt) with add_special_tokens=True
	// (so a post-processor BOS is prepended where the model defines one) and
	// added tokens written in the text recognized as single tokens.
	Encode(ctx context.Context, prompt string) ([]uint32, error)
	// EncodeChat renders the conversation with the model's chat template and
	// tokenizes the result with add_special_tokens=False, as vLLM does for
	// /v1/chat/completions.
	EncodeChat(ctx context.Context, msgs []Message, addGenerationPrompt bool) ([]uint32, error)
}

// Message is one chat turn as seen by a chat template. Callers flatten
// OpenAI content parts into Content (text parts joined) before calling.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Name is the optional participant name; templates may ignore it.
	Name string `json:"name,omitempty"`
}

// Sentinel errors. Match them with errors.Is.
var (
	// ErrUnsupported: the tokenizer.json describes a model this package cannot
	// reproduce exactly in-process (e.g. a Precompiled normalizer as in
	// T5/XLM-R, WordPiece, BPE dropout). Use the remote mode, which asks a
	// worker's /tokenize endpoint.
	ErrUnsupported = errors.New("tokenizer: unsupported tokenizer model (use the remote tokenizer mode, which asks a worker's /tokenize endpoint)")
	// ErrNoChatTemplate: the model has no chat template.
	ErrNoChatTemplate = errors.New("tokenizer: model has no chat template")
	// ErrTemplate: the chat template failed to parse or render (including a
	// raise_exception call from the template, e.g. bad role order).
	ErrTemplate = errors.New("tokenizer: chat template error")
	// ErrInvalidToken: Decode was given an id outside the vocabulary.
	ErrInvalidToken = errors.New("tokenizer: invalid token id")
)
