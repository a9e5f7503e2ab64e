package tokenizer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// goldenModels: ByteLevel BPE (qwen3, llama3, gpt4o) and SentencePiece-style
// byte-fallback BPE ("llama2" is Mistral 7B's Llama-2-style tokenizer;
// gemma is Gemma 1/2's, gemma3 Gemma 3's) and a Unigram model derived from
// the Mistral vocabulary (unigramFixture).
var goldenModels = []string{"qwen3", "llama3", "gpt4o", "llama2", "gemma", "gemma3", "unigram"}

// firstDiff describes where two id slices diverge.
func firstDiff(got, want []uint32) string {
	n := min(len(got), len(want))
	for i := 0; i < n; i++ {
		if got[i] != want[i] {
			lo := max(0, i-3)
			return fmt.Sprintf("at %d: got %v want %v (lens %d/%d)", i, got[lo:min(len(got), i+4)], want[lo:min(len(want), i+4)], len(got), len(want))
		}
	}
	return fmt.Sprintf("lengths differ: got %d want %d", len(got), len(want))
}

// TestGoldenEncode compares our ids with the HF reference implementation's
// (testdata/golden, produced by testdata/gen/gen.sh).
func TestGoldenEncode(t *testing.T) {
	for _, model := range goldenModels {
		t.Run(model, func(t *testing.T) {
			g := readGolden(t, model)
			l := loadFixture(t, model)
			for _, c := range g.Encode {
				// Twice: the second pass is served from the segment cache.
				for pass := range 2 {
					got := l.EncodeText(c.Text, c.AddSpecialTokens)
					if !slices.Equal(got, c.IDs) {
						t.Errorf("%s add_special=%v pass %d: %s", c.Name, c.AddSpecialTokens, pass, firstDiff(got, c.IDs))
					}
				}
				if !c.AddSpecialTokens {
					continue
				}
				got, err := l.Encode(context.Background(), c.Text)
				if err != nil || !slices.Equal(got, c.IDs) {
					t.Errorf("%s: Encode: %v %s", c.Name, err, firstDiff(got, c.IDs))
				}
			}
		})
	}
}

// TestGoldenDecode: decoding the reference ids gives back the text, except
// where the normalizer changed it.
func TestGoldenDecode(t *testing.T) {
	for _, model := range goldenModels {
		t.Run(model, func(t *testing.T) {
			g := readGolden(t, model)
			l := loadFixture(t, model)
			for _, c := range g.Encode {
				if c.AddSpecialTokens {
					continue
				}
				got, err := l.Decode(c.IDs)
				if err != nil {
					t.Fatalf("%s: %v", c.Name, err)
				}
				if c.Decoded != nil {
					if got != *c.Decoded {
						t.Errorf("%s: decode mismatch:\n got %q\nwant %q", c.Name, got, *c.Decoded)
					}
					continue
				}
				if want := l.norm(c.Text); got != want && got != c.Text {
					t.Errorf("%s: decode mismatch:\n got %q\nwant %q", c.Name, got, want)
				}
			}
		})
	}
}

// TestGoldenChat compares chat-template renderings and their ids with the
// reference (@huggingface/jinja, as transformers.js uses).
func TestGoldenChat(t *testing.T) {
	for _, model := range goldenModels {
		t.Run(model, func(t *testing.T) {
			g := readGolden(t, model)
			if len(g.Chat) == 0 {
				t.Skipf("%s: no chat template in the fixture", model)
			}
			l := loadFixture(t, model)
			for _, c := range g.Chat {
				text, err := l.ApplyChatTemplate(c.Messages, c.AddGenerationPrompt)
				if c.Error != "" {
					// The reference's template refused the conversation.
					if !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), c.Error) {
						t.Errorf("%s gen=%v: err = %v, want ErrTemplate %q", c.Name, c.AddGenerationPrompt, err, c.Error)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s gen=%v: %v", c.Name, c.AddGenerationPrompt, err)
					continue
				}
				if text != c.Text {
					t.Errorf("%s gen=%v: render mismatch:\n got %q\nwant %q", c.Name, c.AddGenerationPrompt, text, c.Text)
				}
				ids, err := l.EncodeChat(context.Background(), c.Messages, c.AddGenerationPrompt)
				if err != nil || !slices.Equal(ids, c.IDs) {
					t.Errorf("%s gen=%v: EncodeChat: %v %s", c.Name, c.AddGenerationPrompt, err, firstDiff(ids, c.IDs))
				}
			}
		})
	}
}
