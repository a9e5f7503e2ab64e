package frontend

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/tokenizer"
)

// TestMultimodalRoutesOnTextPrefix: a chat with an image part is routed on
// the text before the part (the messages up to it, without the generation
// prompt) and forwarded whole.
func TestMultimodalRoutesOnTextPrefix(t *testing.T) {
	s := newServerWith(t, false, nil)
	w := newRecWorker(t, 1, 0)
	if err := s.AddWorker(Worker{ID: 1, URL: w.URL}); err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("Describe the picture in detail. ", 40)
	chat := `{"stream":true,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[` +
		`{"type":"text","text":"` + text + `"},{"type":"image_url","image_url":{"url":"http://x/cat.png"}},{"type":"text","text":"and then?"}]},` +
		`{"role":"user","content":"later message"}]}`
	want, err := s.cfg.Tokenizer.EncodeChat(context.Background(), []tokenizer.Message{
		{Role: "system", Content: "be brief"}, {Role: "user", Content: text}}, false)
	if err != nil {
		t.Fatal(err)
	}
	rec := do(t, s.Handler(), "POST", "/route", strings.Replace(chat, `"stream":true,`, "", 1))
	var rr RouteResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &rr); rec.Code != 200 || err != nil || rr.PromptTokens != len(want) {
		t.Fatalf("/route of a multimodal chat: %d %s (%v); want %d prompt tokens (the text before the image)", rec.Code, rec.Body, err, len(want))
	}
	blocks := storeTokens(t, s, 1, want)
	rec = do(t, s.Handler(), "POST", "/v1/chat/completions", chat)
	if rec.Code != 200 || rec.Header().Get(HeaderOverlap) != strconv.Itoa(blocks) {
		t.Fatalf("chat: %d overlap %q, want %d blocks of the text prefix", rec.Code, rec.Header().Get(HeaderOverlap), blocks)
	}
	if got := string(w.body("/v1/chat/completions")); got != chat {
		t.Errorf("multimodal chat forwarded as %s, want unchanged", got)
	}
}
