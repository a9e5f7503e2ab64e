package frontend

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// pickOne adds a worker that is never dialled to s, picks a completion
// (max_tokens 100) and records an answer of content type ct.
func pickOne(t *testing.T, s *Server, ct string) *Picked {
	t.Helper()
	if err := s.AddWorker(Worker{ID: 1, URL: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	p, e := s.Pick(context.Background(), PickRequest{Path: "/v1/completions",
		Body: []byte(`{"model":"m","prompt":"hi","max_tokens":100}`)})
	if e != nil {
		t.Fatal(e.Message)
	}
	p.ResponseHeaders(200, ct)
	return p
}

// TestPickLineBounded: an SSE answer whose line never ends (32 MiB
// without a newline, in 64 KiB chunks) keeps the pick's carried line
// within MaxResponseLine; its parsing is given up, so neither the
// events after it nor the output average count, and Done releases what
// the pick held. The line used to grow with the answer (heap +32 MiB).
func TestPickLineBounded(t *testing.T) {
	s := newServerWith(t, false, func(cfg *Config) { cfg.Router.TrackOutputBlocks = true })
	p := pickOne(t, s, "text/event-stream")
	now := time.Now()
	chunk := bytes.Repeat([]byte("y"), 64<<10)
	for range 512 {
		p.ResponseBody(chunk, now)
		if cap(p.line) > 2*MaxResponseLine {
			t.Fatalf("carried line of %d bytes (cap %d), want at most ~%d", len(p.line), cap(p.line), MaxResponseLine)
		}
	}
	if !p.Unparsed() {
		t.Fatal("a 32 MiB line did not give the parsing up")
	}
	p.ResponseBody([]byte("\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":5}}\n\ndata: [DONE]\n\n"), now)
	if p.f.tokens != 0 || p.f.reportedOutput != 0 {
		t.Fatalf("after giving up: tokens %d, output %d counted, want none", p.f.tokens, p.f.reportedOutput)
	}
	p.Done("")
	if p.Buffered() != 0 {
		t.Fatalf("after Done the pick holds %d bytes", p.Buffered())
	}
	if got := s.expectedOutput(&job{model: "m", maxTokens: 100, hint: -1}); got == 5 {
		t.Fatal("the output average took the usage of an unparsed answer")
	}
}

// FuzzPickedResponseBody: any answer, split anywhere, under either content
// type, is parsed without a panic, and the pick never holds more than
// its bounds for it.
func FuzzPickedResponseBody(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"text\":\"ab\"}]}\n\ndata: [DONE]\n\n"), uint16(7), true)
	f.Add([]byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":5}}\r\n\r\n"), uint16(3), true)
	f.Add([]byte(`{"choices":[{"text":"abcdefg"}],"usage":{"prompt_tokens":3,"completion_tokens":7}}`), uint16(16), false)
	f.Add([]byte("data:\ndata: {\"usage\":{\ndata: [DONE]"), uint16(1), true)
	f.Fuzz(func(t *testing.T, body []byte, split uint16, sse bool) {
		ct := "application/json"
		if sse {
			ct = "text/event-stream"
		}
		p := pickOne(t, newServerWith(t, false, nil), ct)
		n := max(int(split), 1)
		now := time.Now()
		for i := 0; i < len(body); i += n {
			p.ResponseBody(body[i:min(i+n, len(body))], now)
			if p.Buffered() > 2*MaxResponseLine+2*maxAnswer {
				t.Fatalf("pick holds %d bytes", p.Buffered())
			}
		}
		p.Done("")
	})
}
