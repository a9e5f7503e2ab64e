package oai

import (
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestParseCompletion(t *testing.T) {
	for _, tc := range []struct {
		body     string
		text     string
		tokens   []uint32
		isTokens bool
		err      string
	}{
		{body: `{"model":"m","prompt":"hello"}`, text: "hello"},
		{body: `{"prompt":[1,2,3]}`, tokens: []uint32{1, 2, 3}, isTokens: true},
		{body: `{"prompt":["only one"]}`, text: "only one"},
		{body: `{"prompt":[[7,8]]}`, tokens: []uint32{7, 8}, isTokens: true},
		{body: `{"prompt":""}`, text: ""},
		{body: `{"prompt":["a","b"]}`, err: "batched prompts"},
		{body: `{"prompt":[-1]}`, err: "out of range"},
		{body: `{"prompt":[4294967296]}`, err: "out of range"},
		{body: `{"prompt":[1.5]}`, err: "out of range"},
		{body: `{"prompt":[]}`, err: "empty list"},
		{body: `{"prompt":{}}`, err: "must be a string"},
		{body: `{"model":"m"}`, err: "missing required field"},
		{body: `{"prompt":"x","max_tokens":0}`, err: "max_tokens must be at least 1"},
		{body: `{"prompt":"x","n":2}`, err: "only n=1"},
		{body: `[1]`, err: "JSON object"},
		{body: ``, err: "JSON object"},
		{body: `{"prompt":"x"`, err: "invalid request body"},
	} {
		r, err := ParseCompletion([]byte(tc.body))
		if tc.err != "" {
			var oe *Error
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &oe) || oe.Status != 400 {
				t.Errorf("%s: err = %v, want 400 containing %q", tc.body, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if r.Prompt.IsTokens != tc.isTokens || r.Prompt.Text != tc.text || !reflect.DeepEqual(r.Prompt.Tokens, tc.tokens) {
			t.Errorf("%s: prompt = %+v", tc.body, r.Prompt)
		}
	}
}

func TestParseChat(t *testing.T) {
	r, err := ParseChat([]byte(`{"model":"m","messages":[{"role":"system","content":"be brief"},
		{"role":"user","content":[{"type":"text","text":"hi "},{"type":"text","text":"there"}]}],
		"max_tokens":5,"max_completion_tokens":9,"stream":true,"stream_options":{"include_usage":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Messages[1].Content; got != "hi there" {
		t.Errorf("content = %q", got)
	}
	if r.Limit() != 9 || !r.Stream || !r.IncludeUsage() {
		t.Errorf("limit %d stream %v usage %v", r.Limit(), r.Stream, r.IncludeUsage())
	}
	// A non-text part ends the routed text (the request is still valid).
	mm, err := ParseChat([]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"look: "},{"type":"image_url"},{"type":"text","text":"more"}]}]}`))
	if err != nil || mm.Messages[0].Content != "look: " || !mm.Messages[0].NonText {
		t.Errorf("multimodal content: %v %+v", err, mm)
	}
	for body, want := range map[string]string{
		`{"messages":[]}`:                "non-empty",
		`{"messages":[{"content":"x"}]}`: "role is required",
		`{"messages":[{"role":"user","content":"x"}],"max_completion_tokens":0}`: "at least 1",
	} {
		if _, err := ParseChat([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", body, err, want)
		}
	}
}

func TestSetFieldsKeepsOthers(t *testing.T) {
	out, err := SetFields([]byte(`{"model":"m","prompt":"hi","temperature":0.5,"x":{"y":[1]}}`),
		map[string]any{"prompt": []uint32{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	if string(m["prompt"]) != "[1,2]" || string(m["temperature"]) != "0.5" || string(m["x"]) != `{"y":[1]}` {
		t.Errorf("got %s", out)
	}
}

func TestErrorRoundTrip(t *testing.T) {
	e := BadRequest("prompt", "too long")
	got, ok := ParseError(400, e.Body())
	if !ok || *got != *e {
		t.Errorf("round trip: %+v %v", got, ok)
	}
	if _, ok := ParseError(500, []byte("oops")); ok {
		t.Error("non-JSON parsed as error")
	}
}

func TestSSEReader(t *testing.T) {
	in := "\ndata: {\"a\":1}\n\n: keepalive\n\ndata: x\ndata: y\r\n\r\ndata: [DONE]\n\n"
	r := NewSSEReader(strings.NewReader(in), 0)
	var datas []string
	var raw strings.Builder
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		raw.Write(ev.Raw)
		datas = append(datas, string(ev.Data))
	}
	want := []string{`{"a":1}`, "", "x\ny", "[DONE]"}
	if !reflect.DeepEqual(datas, want) {
		t.Errorf("data = %q, want %q", datas, want)
	}
	if raw.String() != in[1:] {
		t.Errorf("raw = %q", raw.String())
	}
	r = NewSSEReader(strings.NewReader("data: partial"), 0)
	if ev, err := r.Next(); err != io.ErrUnexpectedEOF || string(ev.Data) != "partial" {
		t.Errorf("partial: %q %v", ev.Data, err)
	}
	r = NewSSEReader(strings.NewReader("data: "+strings.Repeat("x", 100)+"\n\n"), 50)
	if _, err := r.Next(); !errors.Is(err, ErrLineTooLong) {
		t.Errorf("long line: %v", err)
	}
}

// TestDecodePrefillAnswer: the checks on a prefill answer's
// kv_transfer_params, one field at a time.
func TestDecodePrefillAnswer(t *testing.T) {
	const ok = `"do_remote_prefill":true,"remote_engine_id":"e","remote_block_ids":[1]`
	for _, tc := range []struct {
		params string
		valid  bool
	}{
		{`{` + ok + `}`, true},
		{`{` + ok + `,"remote_host":"10.0.0.1","remote_port":5600,"tp_size":2,"remote_request_id":"r","new_field":[1]}`, true},
		{`{` + ok + `,"remote_host":null,"remote_port":null}`, true},
		{`"not-an-object"`, false},
		{`[1]`, false},
		{`null`, false},
		{`{"remote_engine_id":"e","remote_block_ids":[1]}`, false},
		{`{` + ok + `,"do_remote_decode":true}`, false},
		{`{` + ok + `,"Do_Remote_Decode":false}`, false},
		{`{"do_remote_prefill":true,"remote_engine_id":"","remote_block_ids":[1]}`, false},
		{`{"do_remote_prefill":true,"remote_engine_id":"e"}`, false},
		{`{"do_remote_prefill":true,"remote_engine_id":"e","remote_block_ids":[-3]}`, false},
		{`{"do_remote_prefill":true,"remote_engine_id":"e","remote_block_ids":["1"]}`, false},
		{`{` + ok + `,"remote_port":70000}`, false},
		{`{` + ok + `,"remote_port":"80"}`, false},
		{`{` + ok + `,"remote_host":""}`, false},
		{`{` + ok + `,"pad":"` + strings.Repeat("x", MaxKVTransferParams) + `"}`, false},
	} {
		_, err := DecodePrefillAnswer([]byte(`{"choices":[],"kv_transfer_params":` + tc.params + `}`))
		if (err == nil) != tc.valid {
			t.Errorf("%.80s: err %v, want valid %v", tc.params, err, tc.valid)
		}
	}
}

// TestSSEEventBounded: an event of many short lines is bounded like a
// long line (before: it grew without bound, each line under the limit).
func TestSSEEventBounded(t *testing.T) {
	in := strings.Repeat("data: "+strings.Repeat("x", 30)+"\n", 1000) + "\n"
	_, err := NewSSEReader(strings.NewReader(in), 1024).Next()
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("an event of %d bytes under a 1024-byte limit: %v", len(in), err)
	}
	ev, err := NewSSEReader(strings.NewReader("data: a\ndata: b\n\n"), 1024).Next()
	if err != nil || string(ev.Data) != "a\nb" {
		t.Fatalf("%q %v", ev.Data, err)
	}
}
