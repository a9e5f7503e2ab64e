package frontend

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/internal/discovery"
)

// TestJoinMaxNumSeqs: a discovered worker's max_num_seqs reaches the
// router's WorkerInfo; a worker that announces none gets
// Config.WorkerMaxNumSeqs (0 by default: no cap rule); GET /debug/index
// shows the cap the router uses on the worker's line.
func TestJoinMaxNumSeqs(t *testing.T) {
	for _, tc := range []struct {
		def, announced, wantUnset int
	}{
		{def: 0, announced: 128, wantUnset: 0},
		{def: 64, announced: 128, wantUnset: 64},
	} {
		s := newServerWith(t, false, func(c *Config) { c.WorkerMaxNumSeqs = tc.def; c.LoadPollInterval = -1 })
		for _, w := range []discovery.Worker{
			{ID: 1, URL: "http://127.0.0.1:1", MaxNumSeqs: tc.announced, MaxBatchedTokens: 4096},
			{ID: 2, URL: "http://127.0.0.1:2"},
		} {
			if err := s.Join(w); err != nil {
				t.Fatal(err)
			}
		}
		got := map[uint64]int{}
		for _, info := range s.Router().Workers() {
			got[info.ID] = info.MaxNumSeqs
			if info.ID == 1 && info.MaxNumBatchedTokens != 4096 {
				t.Errorf("default %d: worker 1 batched tokens %d", tc.def, info.MaxNumBatchedTokens)
			}
		}
		if got[1] != tc.announced || got[2] != tc.wantUnset || len(got) != 2 {
			t.Errorf("default %d: router max_num_seqs %v, want 1:%d 2:%d", tc.def, got, tc.announced, tc.wantUnset)
		}
		// A re-registration without the field falls back to the default.
		if err := s.Join(discovery.Worker{ID: 1, URL: "http://127.0.0.1:1"}); err != nil {
			t.Fatal(err)
		}
		for _, info := range s.Router().Workers() {
			if info.ID == 1 && info.MaxNumSeqs != tc.wantUnset {
				t.Errorf("default %d: re-registered worker 1 max_num_seqs %d, want %d", tc.def, info.MaxNumSeqs, tc.wantUnset)
			}
		}
		rec := do(t, s.Handler(), "GET", "/debug/index", "")
		var rep IndexReport
		if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil || rec.Code != 200 {
			t.Fatalf("/debug/index %d: %v: %s", rec.Code, err, rec.Body)
		}
		for _, w := range rep.Workers {
			if w.MaxNumSeqs != tc.wantUnset {
				t.Errorf("default %d: /debug/index worker %d max_num_seqs %d, want %d", tc.def, w.Worker, w.MaxNumSeqs, tc.wantUnset)
			}
		}
		if has := strings.Contains(rec.Body.String(), `"max_num_seqs"`); has != (tc.wantUnset != 0) {
			t.Errorf("default %d: /debug/index mentions max_num_seqs: %v: %s", tc.def, has, rec.Body)
		}
	}
}

// TestWorkerMaxNumSeqsValidate: the default is bounded like a
// registration's field.
func TestWorkerMaxNumSeqsValidate(t *testing.T) {
	c := DefaultConfig()
	c.Tokenizer = newServerWith(t, false, nil).cfg.Tokenizer
	for _, v := range []int{-1, discovery.MaxNumSeqs + 1} {
		c.WorkerMaxNumSeqs = v
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "max_num_seqs") {
			t.Errorf("worker max_num_seqs %d: %v", v, err)
		}
	}
	for _, v := range []int{0, 256, discovery.MaxNumSeqs} {
		c.WorkerMaxNumSeqs = v
		if err := c.Validate(); err != nil {
			t.Errorf("worker max_num_seqs %d: %v", v, err)
		}
	}
}
