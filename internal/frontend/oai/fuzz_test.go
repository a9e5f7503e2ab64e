package oai

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

func FuzzParseCompletion(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","prompt":"hello","max_tokens":3,"stream":true}`,
		`{"prompt":[1,2,3]}`, `{"prompt":[[1]]}`, `{"prompt":["a"]}`, `{"prompt":[1e10]}`,
		`{"prompt":null}`, `{}`, `[]`, `{"prompt":"x","n":1,"stream_options":{"include_usage":true}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := ParseCompletion(body)
		if err != nil {
			var oe *Error
			if !errors.As(err, &oe) || oe.Status != 400 {
				t.Fatalf("error not a 400 *Error: %v", err)
			}
			return
		}
		if r.Prompt.IsTokens && (len(r.Prompt.Tokens) == 0 || r.Prompt.Text != "") {
			t.Fatalf("bad token prompt %+v", r.Prompt)
		}
		if r.MaxTokens != nil && *r.MaxTokens < 1 {
			t.Fatalf("accepted max_tokens %d", *r.MaxTokens)
		}
		// The prompt must survive a re-encode in the form it was given.
		b, err := json.Marshal(r.Prompt)
		if err != nil {
			t.Fatal(err)
		}
		var p Prompt
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("re-decode %s: %v", b, err)
		}
		if p.IsTokens != r.Prompt.IsTokens || p.Text != r.Prompt.Text || len(p.Tokens) != len(r.Prompt.Tokens) {
			t.Fatalf("round trip %+v -> %+v", r.Prompt, p)
		}
	})
}

func FuzzParseChat(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"max_completion_tokens":2}`,
		`{"messages":[{"role":"user","content":null}]}`, `{"messages":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := ParseChat(body)
		if err != nil {
			var oe *Error
			if !errors.As(err, &oe) || oe.Status != 400 {
				t.Fatalf("error not a 400 *Error: %v", err)
			}
			return
		}
		if len(r.Messages) == 0 {
			t.Fatal("accepted empty messages")
		}
		for _, m := range r.Messages {
			if m.Role == "" {
				t.Fatal("accepted empty role")
			}
		}
	})
}

func FuzzSSEReader(f *testing.F) {
	f.Add("data: a\n\ndata: [DONE]\n\n")
	f.Add(": c\r\n\r\ndata:x\ndata:y\n")
	f.Fuzz(func(t *testing.T, in string) {
		r := NewSSEReader(strings.NewReader(in), 64)
		var raw strings.Builder
		for i := 0; ; i++ {
			ev, err := r.Next()
			raw.Write(ev.Raw)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrLineTooLong) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if i > len(in) {
				t.Fatal("more events than bytes")
			}
		}
	})
}

// FuzzParseUintList checks the token-list fast path against encoding/json.
func FuzzParseUintList(f *testing.F) {
	for _, s := range []string{"[1,2,3]", "[ 0 , 4294967295 ]", "[]", "[01]", "[1,]", "[1.0]", "[4294967296]", "[1] x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '[' {
			return
		}
		got, ok := parseUintList(b)
		if !ok {
			return
		}
		var want []uint32
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("fast path accepted %q, encoding/json: %v", b, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %v vs %v", b, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%q: %v vs %v", b, got, want)
			}
		}
	})
}
