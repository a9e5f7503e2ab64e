package mockerd

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/mocker"
)

// TestEmitterChunksAreValid checks the hand-assembled chunks against the
// typed structs they must decode into.
func TestEmitterChunksAreValid(t *testing.T) {
	for _, chat := range []bool{false, true} {
		e := &emitter{chat: chat, id: "cmpl-\"7", model: "m\\x", created: 42}
		var buf bytes.Buffer
		for i, fin := range []bool{false, false, true} {
			buf.Reset()
			if err := e.chunk(&buf, mocker.Output{Token: uint32(i * 5), Finished: fin}); err != nil {
				t.Fatal(err)
			}
			data, ok := bytes.CutPrefix(bytes.TrimSuffix(buf.Bytes(), []byte("\n\n")), []byte("data: "))
			if !ok {
				t.Fatalf("not an SSE event: %q", buf.Bytes())
			}
			var text string
			var fr *string
			if chat {
				var c oai.ChatChunk
				if err := json.Unmarshal(data, &c); err != nil {
					t.Fatalf("%s: %v", data, err)
				}
				if (c.Choices[0].Delta.Role == "assistant") != (i == 0) || c.ID != e.id || c.Model != e.model || c.Object != "chat.completion.chunk" {
					t.Errorf("chunk %d: %s", i, data)
				}
				text, fr = *c.Choices[0].Delta.Content, c.Choices[0].FinishReason
			} else {
				var c oai.Completion
				if err := json.Unmarshal(data, &c); err != nil {
					t.Fatalf("%s: %v", data, err)
				}
				if c.ID != e.id || c.Created != 42 || c.Object != "text_completion" {
					t.Errorf("chunk %d: %s", i, data)
				}
				text, fr = c.Choices[0].Text, c.Choices[0].FinishReason
			}
			if text != TokenText(uint32(i*5)) || (fr != nil) != fin {
				t.Errorf("chunk %d: text %q finish %v", i, text, fr)
			}
		}
	}
}
