package discovery_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/internal/discovery"
)

// TestMaxNumSeqsRegistration: a registration's max_num_seqs survives the
// JSON round trip through the registry's decoder, is left out when 0 (a
// router that predates the field decodes the same record), and is refused
// when negative or above discovery.MaxNumSeqs.
func TestMaxNumSeqsRegistration(t *testing.T) {
	w := discovery.Worker{ID: 4, URL: "http://127.0.0.1:8000", BlockSize: 16, MaxBatchedTokens: 8192, MaxNumSeqs: 256}
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"max_num_seqs":256`) {
		t.Fatalf("registration %s lacks max_num_seqs", b)
	}
	got, err := discovery.DecodeRegistration("w.4", b)
	if err != nil {
		t.Fatal(err)
	}
	if got.MaxNumSeqs != 256 || got.MaxBatchedTokens != 8192 {
		t.Fatalf("decoded %+v from %s", got, b)
	}
	w.MaxNumSeqs = 0
	if b, _ := json.Marshal(w); strings.Contains(string(b), "max_num_seqs") {
		t.Fatalf("unset max_num_seqs encoded: %s", b)
	}
	for _, tc := range []struct {
		val    string
		want   int
		reason string // "" = accepted
	}{
		{`{"id":4,"url":"http://h:1"}`, 0, ""},
		{`{"id":4,"url":"http://h:1","max_num_seqs":1}`, 1, ""},
		{`{"id":4,"url":"http://h:1","max_num_seqs":1048576}`, discovery.MaxNumSeqs, ""},
		{`{"id":4,"url":"http://h:1","max_num_seqs":1048577}`, 0, discovery.ReasonInvalid},
		{`{"id":4,"url":"http://h:1","max_num_seqs":-1}`, 0, discovery.ReasonInvalid},
		{`{"id":4,"url":"http://h:1","max_num_seqs":9223372036854775807}`, 0, discovery.ReasonInvalid},
		{`{"id":4,"url":"http://h:1","max_num_seqs":2.5}`, 0, discovery.ReasonDecode},
		{`{"id":4,"url":"http://h:1","max_num_seqs":"256"}`, 0, discovery.ReasonDecode},
	} {
		got, err := discovery.DecodeRegistration("w.4", []byte(tc.val))
		switch {
		case tc.reason == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.val, err)
		case tc.reason == "" && got.MaxNumSeqs != tc.want:
			t.Errorf("%s: max_num_seqs %d, want %d", tc.val, got.MaxNumSeqs, tc.want)
		case tc.reason != "" && discovery.Reason(err) != tc.reason:
			t.Errorf("%s: reason %q (%v), want %s", tc.val, discovery.Reason(err), err, tc.reason)
		}
	}
}

// TestMaxNumSeqsStatic: the static sources take max_num_seqs as they take
// max_num_batched_tokens: --worker's max-num-seqs= key and the fleet
// file's max_num_seqs, with the same bounds.
func TestMaxNumSeqsStatic(t *testing.T) {
	w, err := discovery.ParseWorkerFlag("http://10.0.0.5:8000,id=2,max-batched-tokens=4096,max-num-seqs=128")
	if err != nil {
		t.Fatal(err)
	}
	if w.MaxNumSeqs != 128 || w.MaxBatchedTokens != 4096 {
		t.Fatalf("--worker parsed %+v", w)
	}
	for _, bad := range []string{"http://x:1,max-num-seqs=-1", "http://x:1,max-num-seqs=x", "http://x:1,max-num-seqs=1048577"} {
		if w, err := discovery.ParseWorkerFlag(bad); err == nil {
			t.Errorf("%q parsed: %+v", bad, w)
		}
	}
	ws, err := discovery.DecodeStatic(strings.NewReader("workers:\n  - url: http://a:1\n    max_num_seqs: 64\n  - url: http://b:1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 || ws[0].MaxNumSeqs != 64 || ws[1].MaxNumSeqs != 0 {
		t.Fatalf("static file decoded %+v", ws)
	}
	if _, err := discovery.DecodeStatic(strings.NewReader("workers:\n  - url: http://a:1\n    max_num_seqs: -3\n")); err == nil {
		t.Fatal("negative max_num_seqs accepted from the static file")
	}
}
