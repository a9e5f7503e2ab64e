package remote

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDecodeAnswerBounded: an answer longer than the bound fails (it is
// cut there), as do answers without tokens or with a wrong count.
func TestDecodeAnswerBounded(t *testing.T) {
	ok := `{"count":3,"max_model_len":8,"tokens":[1,2,3]}`
	if ids, err := decodeAnswer(strings.NewReader(ok), int64(len(ok))); err != nil || len(ids) != 3 {
		t.Fatalf("decodeAnswer(%s) = %v, %v", ok, ids, err)
	}
	for name, in := range map[string]string{
		"beyond the bound": `{"tokens":[` + strings.Repeat("1,", 64) + `1]}`,
		"no tokens":        `{"count":0}`,
		"wrong count":      `{"count":2,"tokens":[1]}`,
		"negative id":      `{"tokens":[-1]}`,
	} {
		if _, err := decodeAnswer(strings.NewReader(in), 100); err == nil {
			t.Errorf("%s: accepted %s", name, in)
		}
	}
}

// FuzzDecodeAnswer: whatever a remote tokenizer answers, decoding fails or
// yields the token ids it listed, as many as its count says.
func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range []string{`{"count":2,"tokens":[1,2]}`, `{"tokens":[]}`, `{"tokens":[4294967296]}`,
		`{"count":-1,"tokens":[1]}`, `{"tokens":[1]}garbage`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ids, err := decodeAnswer(strings.NewReader(string(data)), 1<<16)
		if err != nil {
			return
		}
		if ids == nil {
			t.Fatal("nil tokens accepted")
		}
		var a response
		if json.Unmarshal(data, &a) == nil && a.Count != 0 && a.Count != len(ids) {
			t.Fatalf("count %d, %d ids", a.Count, len(ids))
		}
	})
}
