package discovery_test

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvrouter/kvrouter/internal/discovery"
	"github.com/kvrouter/kvrouter/router"
)

func TestDecodeRegistration(t *testing.T) {
	for _, tc := range []struct {
		key, val string
		reason   string // "" = accepted
	}{
		{"w.1", `{"id":1,"url":"http://127.0.0.1:8000","dp_size":2,"block_size":16,"epoch":"e1"}`, ""},
		{"w.1", `{"id":1,"url":"https://engine.example/v1"}`, ""},
		{"w.5", `{"id":5,"url":"http://h:1","dp_size":4611686018427387904}`, discovery.ReasonInvalid},
		{"w.5", `{"id":5,"url":"http://h:1","dp_size":1025}`, discovery.ReasonInvalid},
		{"w.5", `{"id":5,"url":"http://h:1","block_size":-1}`, discovery.ReasonInvalid},
		{"w.5", `{"id":5,"url":"http://h:1","block_size":65537}`, discovery.ReasonInvalid},
		{"w.5", `{"id":5,"url":"http://h:1","total_kv_blocks":9223372036854775807}`, discovery.ReasonInvalid},
		{"w.5", `{"id":5,"url":"http://h:1","max_num_batched_tokens":2147483648}`, discovery.ReasonInvalid},
		{"w.5", `{"id":5,"url":"ftp://h:1"}`, discovery.ReasonInvalid},
		{"w.5", `{"id":5,"url":"http://:1"}`, discovery.ReasonInvalid},
		{"w.5", `{"id":5,"url":"http://u:p@h:1"}`, discovery.ReasonInvalid},
		{"w.5", `{"id":5,"url":"http://h:99999"}`, discovery.ReasonInvalid},
		{"w.5", `{"id":5,"url":"/relative"}`, discovery.ReasonInvalid},
		{"w.5", `{"id":5,"url":"http://h:1","event_endpoint":"tcp://h"}`, discovery.ReasonInvalid},
		{"w.5", `{"id":5,"url":"http://h:1","event_endpoint":"ipc:///tmp/x"}`, discovery.ReasonInvalid},
		{"w.5", `{"id":5,"url":"http://h:1","labels":{"":"x"}}`, discovery.ReasonInvalid},
		{"w.5", `{"id":5,"url":"http://h:1","dp_size":1.5}`, discovery.ReasonDecode},
		{"w.5", `{"id":5,"url":"http://h:1","dp_size":1e30}`, discovery.ReasonDecode},
		{"w.5", `[]`, discovery.ReasonDecode},
		{"w.5", ``, discovery.ReasonDecode},
		{"w.5", `{"id":6,"url":"http://h:1"}`, discovery.ReasonIDMismatch},
		{"w.0", `{"id":0,"url":"http://h:1"}`, discovery.ReasonKey},
		{"w.x", `{"id":1,"url":"http://h:1"}`, discovery.ReasonKey},
		{"w.01", `{"id":1,"url":"http://h:1"}`, discovery.ReasonKey},
		{"x.1", `{"id":1,"url":"http://h:1"}`, discovery.ReasonKey},
	} {
		w, err := discovery.DecodeRegistration(tc.key, []byte(tc.val))
		switch {
		case tc.reason == "" && err != nil:
			t.Errorf("%s %s: refused: %v", tc.key, tc.val, err)
		case tc.reason != "" && err == nil:
			t.Errorf("%s %s: accepted %+v, want %s", tc.key, tc.val, w, tc.reason)
		case tc.reason != "" && discovery.Reason(err) != tc.reason:
			t.Errorf("%s %s: reason %s (%v), want %s", tc.key, tc.val, discovery.Reason(err), err, tc.reason)
		}
	}
	if r := discovery.Reason(errors.New("other")); r != discovery.ReasonRouter {
		t.Errorf("reason of a foreign error: %s", r)
	}
}

// FuzzDecodeRegistration: no bytes make the decoder panic, and whatever
// it accepts the router accepts too (without panicking or allocating
// beyond the bounds).
func FuzzDecodeRegistration(f *testing.F) {
	f.Add("w.1", []byte(`{"id":1,"url":"http://127.0.0.1:8000","dp_size":2,"block_size":16}`))
	f.Add("w.5", []byte(`{"id":5,"url":"http://h:1","dp_size":4611686018427387904}`))
	f.Add("w.7", []byte(`{"id":7,"url":"http://h:1","labels":{"a":"b"},"event_endpoint":"tcp://h:5557"}`))
	f.Add("w.x", []byte(`nope`))
	f.Add("w.9", []byte(`{"id":9,"url":"http://h:1","max_num_batched_tokens":8192,"max_num_seqs":256}`))
	f.Add("w.9", []byte(`{"id":9,"url":"http://h:1","max_num_seqs":1048577}`))
	f.Add("w.3", []byte(`{"id":3,"url":"http://h:1","epoch":"0123456789abcdef"}`))
	f.Add("w.3", []byte(`{"id":3,"url":"http://h:1","epoch":{"x":1}}`))
	f.Add("w.4", []byte(`{"id":4,"url":"http://h:1","max_loras":2,"loras":["sql","chat"]}`))
	f.Add("w.4", []byte(`{"id":4,"url":"http://h:1","max_loras":-1,"loras":[""]}`))
	f.Fuzz(func(t *testing.T, key string, val []byte) {
		w, err := discovery.DecodeRegistration(key, val)
		if err != nil {
			return
		}
		if w.Validate() != nil || w.DPSize > router.MaxDPSize {
			t.Fatalf("accepted an invalid worker %+v", w)
		}
		cfg := router.DefaultConfig()
		if w.BlockSize != 0 {
			cfg.BlockSize = w.BlockSize
		}
		rt, err := router.New(cfg, router.Options{Rand: rand.New(rand.NewPCG(1, 2))})
		if err != nil {
			t.Fatal(err)
		}
		info := router.WorkerInfo{ID: w.ID, DPSize: w.DPSize, MaxNumBatchedTokens: w.MaxBatchedTokens, MaxNumSeqs: w.MaxNumSeqs,
			TotalKVBlocks: w.TotalKVBlocks, BlockSize: w.BlockSize, Labels: w.Labels,
			LoRAKnown: w.MaxLoRAs > 0 || w.LoRAs != nil, LoRAs: w.LoRAs, MaxLoRAs: w.MaxLoRAs}
		if err := rt.AddWorker(info); err != nil {
			t.Fatalf("router refused an accepted registration %+v: %v", w, err)
		}
		if b, err := json.Marshal(w); err != nil || len(b) == 0 {
			t.Fatalf("re-encode: %v", err)
		}
	})
}

type logMembers struct {
	log []string
}

func (m *logMembers) Join(w discovery.Worker) error {
	if w.DPSize == 7 {
		panic("boom")
	}
	m.log = append(m.log, "join "+w.Epoch)
	return nil
}
func (m *logMembers) Leave(id uint64) { m.log = append(m.log, "leave") }

// TestFleetEpochAndRecover: a known worker with a new epoch leaves and
// joins again (its cache state dropped); the same epoch is an update; a
// panic below Join is a refusal with reason "panic", not a crash.
func TestFleetEpochAndRecover(t *testing.T) {
	m := &logMembers{}
	f := discovery.NewFleet(64, m, nil)
	var reasons []string
	f.OnRefused = func(r string) { reasons = append(reasons, r) }
	w := discovery.Worker{ID: 1, URL: "http://h:1", Epoch: "a"}
	for _, e := range []string{"a", "a", "b"} {
		w.Epoch = e
		if err := f.Join(w); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.log; len(got) != 4 || got[0] != "join a" || got[1] != "join a" || got[2] != "leave" || got[3] != "join b" {
		t.Errorf("membership saw %q", got)
	}
	if f.Restarts() != 1 {
		t.Errorf("restarts %d", f.Restarts())
	}
	if err := f.Join(discovery.Worker{ID: 2, URL: "http://h:2", DPSize: 7}); discovery.Reason(err) != discovery.ReasonPanic {
		t.Errorf("panicking join: %v", err)
	}
	if err := f.Join(discovery.Worker{ID: 3, URL: "http://h:3", DPSize: math.MaxInt}); discovery.Reason(err) != discovery.ReasonInvalid {
		t.Errorf("dp size MaxInt: %v", err)
	}
	if len(reasons) != 2 || reasons[0] != "panic" || reasons[1] != "invalid" || f.Refused() != 2 {
		t.Errorf("refusals %q (%d)", reasons, f.Refused())
	}
	if ws := f.Workers(); len(ws) != 1 || ws[0].ID != 1 {
		t.Errorf("members %+v", ws)
	}
}
