package tokenizer

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

// countdownCtx is done after its Err was asked n times: a cancellation
// that arrives while the encoder runs, without a clock.
type countdownCtx struct {
	context.Context
	n    atomic.Int64
	done chan struct{}
}

func newCountdown(n int64) *countdownCtx {
	c := &countdownCtx{Context: context.Background(), done: make(chan struct{})}
	c.n.Store(n)
	return c
}

func (c *countdownCtx) Done() <-chan struct{} { return c.done }

func (c *countdownCtx) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestEncodeCancelledMidway: a context that ends while a huge prompt is
// being encoded stops the encoder (one-word and many-word prompts, plain
// and chat), and nothing partial is cached for the next caller.
func TestEncodeCancelledMidway(t *testing.T) {
	tok, err := Default(Options{})
	if err != nil {
		t.Fatal(err)
	}
	oneWord := strings.Repeat("a", 1<<20)
	manyWords := strings.Repeat("hello world ", 1<<16)
	for name, text := range map[string]string{"one word": oneWord, "many words": manyWords} {
		ctx := newCountdown(3) // the checks before and in the first rounds pass
		if _, err := tok.Encode(ctx, text); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Encode = %v, want context.Canceled from inside the encoder", name, err)
		}
		if left := ctx.n.Load(); left >= 0 {
			t.Errorf("%s: the encoder never checked the context", name)
		}
		ctx = newCountdown(3)
		if _, err := tok.EncodeChat(ctx, []Message{{Role: "user", Content: text}}, true); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: EncodeChat = %v, want context.Canceled", name, err)
		}
		full := tok.EncodeText(text, true)
		got, err := tok.Encode(context.Background(), text)
		if err != nil || len(got) != len(full) {
			t.Errorf("%s: after a cancelled encode: %d ids (%v), want %d", name, len(got), err, len(full))
		}
	}
}
