package oai

import (
	"encoding/json"
	"errors"
	"io"
	"reflect"
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

// FuzzDecodePrefillAnswer: whatever a prefill worker answers, the decoder
// returns an error or kv_transfer_params that are a bounded object which
// decodes as a valid NIXL answer (what the decode worker will read).
func FuzzDecodePrefillAnswer(f *testing.F) {
	for _, s := range []string{
		`{"kv_transfer_params":{"do_remote_prefill":true,"do_remote_decode":false,"remote_engine_id":"e","remote_block_ids":[1,2],"remote_host":"h","remote_port":1,"tp_size":1}}`,
		`{"kv_transfer_params":"not-an-object"}`, `{"kv_transfer_params":null}`, `{}`, `[]`, `null`,
		`{"kv_transfer_params":{"do_remote_prefill":true,"remote_engine_id":"e","remote_block_ids":[-1]}}`,
		`{"kv_transfer_params":{"do_remote_prefill":true,"remote_engine_id":"e","remote_block_ids":[],"DO_REMOTE_DECODE":true}}`,
		`{"kv_transfer_params":{"do_remote_prefill":true,"remote_engine_id":"e","remote_block_ids":[1],"x":{"y":[1]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		raw, err := DecodePrefillAnswer(body)
		if err != nil {
			if !errors.Is(err, ErrPrefillAnswer) {
				t.Fatalf("error does not wrap ErrPrefillAnswer: %v", err)
			}
			return
		}
		if len(raw) > MaxKVTransferParams+len(body) {
			t.Fatalf("%d bytes", len(raw))
		}
		var p KVTransferParams
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatalf("accepted %s: %v", raw, err)
		}
		if !p.DoRemotePrefill || p.DoRemoteDecode || p.RemoteEngineID == nil || *p.RemoteEngineID == "" || p.RemoteBlockIDs == nil {
			t.Fatalf("accepted %s", raw)
		}
		// Accepting is stable: the result decodes to itself.
		again, err := DecodePrefillAnswer(append(append([]byte(`{"kv_transfer_params":`), raw...), '}'))
		if err != nil || string(again) != string(raw) {
			t.Fatalf("re-decode of %s: %s, %v", raw, again, err)
		}
	})
}

// FuzzStripEngineFields: after the strip no top-level key is an engine
// field in any letter case, vllm_xargs holds no kv_transfer_params, and
// every other top-level field keeps its value (encoding/json re-encodes
// it: "&" becomes "\u0026").
func FuzzStripEngineFields(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"x","kv_transfer_params":{"do_remote_decode":true},"bootstrap_host":"h"}`,
		`{"prompt":"x","KV_TRANSFER_PARAMS":1,"kv_transfer_param\u0073":2,"vllm_xargs":{"kv_transfer_params":"y","a":1}}`,
		`{"prompt":"x"}`, `{"vllm_xargs":"s"}`, `[]`, `{"bootstrap_room":1,"bootstrap_room":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, removed, err := StripEngineFields(body)
		if err != nil {
			return
		}
		if removed == nil {
			if string(out) != string(body) {
				t.Fatal("nothing removed, body changed")
			}
			return
		}
		var before, after map[string]json.RawMessage
		if json.Unmarshal(body, &before) != nil || json.Unmarshal(out, &after) != nil {
			t.Fatalf("not objects: %s -> %s", body, out)
		}
		for k, v := range after {
			for _, f := range engineFieldNames {
				if strings.EqualFold(k, f) {
					t.Fatalf("%s left in %s", k, out)
				}
			}
			if strings.EqualFold(k, "vllm_xargs") {
				var x map[string]json.RawMessage
				if json.Unmarshal(v, &x) == nil {
					for xk := range x {
						if strings.EqualFold(xk, "kv_transfer_params") {
							t.Fatalf("vllm_xargs.%s left in %s", xk, out)
						}
					}
				}
				continue
			}
			var a, b any
			_ = json.Unmarshal(before[k], &a)
			_ = json.Unmarshal(v, &b)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%s changed: %s -> %s", k, before[k], v)
			}
		}
		var e struct{ EngineFields }
		if json.Unmarshal(out, &e) != nil || len(e.KVTransferParams)+len(e.BootstrapHost)+len(e.BootstrapPort)+len(e.BootstrapRoom) > 0 {
			t.Fatalf("a decode still finds engine fields in %s", out)
		}
	})
}
