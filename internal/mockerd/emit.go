package mockerd

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/mocker"
)

var words = [...]string{" the", " cache", " router", " token", " block", " prefix", " worker", " mock",
	" stream", " fleet", " hash", " model", " prompt", " index", " event", " load"}

// TokenText is the text of a dummy output token: one word from a fixed list.
func TokenText(tok uint32) string { return words[tok%uint32(len(words))] }

// quotedWords are the words as JSON strings.
var quotedWords = func() [len(words)][]byte {
	var q [len(words)][]byte
	for i, w := range words {
		q[i], _ = json.Marshal(w)
	}
	return q
}()

// emitter writes one request's response in the OpenAI shape of its endpoint.
// Streamed chunks are assembled from pre-rendered JSON pieces (one
// json.Marshal per token was the mocker's largest CPU cost at 1000 req/s).
type emitter struct {
	chat     bool
	id       string
	model    string
	created  int64
	sentRole bool
	head     []byte // `{"id":...,"choices":[{"index":0,` up to the text/delta
	buf      []byte
}

func (e *emitter) prefix() []byte {
	if e.head == nil {
		obj := "text_completion"
		if e.chat {
			obj = "chat.completion.chunk"
		}
		id, _ := json.Marshal(e.id)
		model, _ := json.Marshal(e.model)
		e.head = fmt.Appendf(nil, `{"id":%s,"object":"%s","created":%d,"model":%s,"choices":[{"index":0,`, id, obj, e.created, model)
	}
	return e.head
}

func (e *emitter) chunk(w io.Writer, o mocker.Output) error {
	b := append(e.buf[:0], "data: "...)
	b = append(b, e.prefix()...)
	word := quotedWords[o.Token%uint32(len(words))]
	if e.chat {
		b = append(b, `"delta":{`...)
		if !e.sentRole {
			b = append(b, `"role":"assistant",`...)
			e.sentRole = true
		}
		b = append(b, `"content":`...)
		b = append(b, word...)
		b = append(b, '}')
	} else {
		b = append(b, `"text":`...)
		b = append(b, word...)
	}
	if o.Finished {
		b = append(b, `,"logprobs":null,"finish_reason":"length"}]}`...)
	} else {
		b = append(b, `,"logprobs":null,"finish_reason":null}]}`...)
	}
	b = append(b, '\n', '\n')
	e.buf = b
	_, err := w.Write(b)
	return err
}

func (e *emitter) usage(w io.Writer, u *oai.Usage) error {
	var v any
	if e.chat {
		v = oai.ChatChunk{ID: e.id, Object: "chat.completion.chunk", Created: e.created, Model: e.model,
			Choices: []oai.ChatChunkChoice{}, Usage: u}
	} else {
		v = oai.Completion{ID: e.id, Object: "text_completion", Created: e.created, Model: e.model,
			Choices: []oai.CompletionChoice{}, Usage: u}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return oai.WriteEvent(w, b)
}

func (e *emitter) whole(text string, u *oai.Usage) any {
	fin := oai.StrPtr(oai.FinishLength)
	if e.chat {
		return oai.ChatCompletion{ID: e.id, Object: "chat.completion", Created: e.created, Model: e.model,
			Choices: []oai.ChatChoice{{Message: oai.ChatMessage{Role: "assistant", Content: text},
				Logprobs: nullJSON, FinishReason: fin}}, Usage: u}
	}
	return oai.Completion{ID: e.id, Object: "text_completion", Created: e.created, Model: e.model,
		Choices: []oai.CompletionChoice{{Text: text, Logprobs: nullJSON, FinishReason: fin}}, Usage: u}
}

var nullJSON = json.RawMessage("null")
