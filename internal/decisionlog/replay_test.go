package decisionlog

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
	"github.com/kvrouter/kvrouter/router"
)

// routedLog routes n requests through a real router (worker 2 caches a
// prefix, every request books load) and logs them all.
func routedLog(t *testing.T, n int) []Record {
	t.Helper()
	cfg := router.DefaultConfig()
	cfg.BlockSize = 4
	r, err := router.New(cfg, router.Options{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 3; id++ {
		if err := r.AddWorker(router.WorkerInfo{ID: id, MaxNumBatchedTokens: 8192, TotalKVBlocks: 4096, BlockSize: 4}); err != nil {
			t.Fatal(err)
		}
	}
	prompt := make([]uint32, 64)
	for i := range prompt {
		prompt[i] = uint32(i)
	}
	ev := &kvevents.Event{WorkerID: 2, EventID: 1, Kind: kvevents.KindStored}
	for i, l := range kvhash.LocalHashes(prompt[:48], 4, kvhash.Seed("", "")) {
		ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: uint64(1000 + i), Local: l})
	}
	if err := r.ApplyEvent(ev); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := New(&buf, Config{Rate: 1000}, (&clock{time.Unix(0, 0)}).now)
	for i := 0; i < n; i++ {
		req := router.Request{ID: fmt.Sprintf("r%d", i), Tokens: prompt, Inputs: w.Sample()}
		d, err := r.Route(context.Background(), req, time.Unix(0, int64(i)*int64(time.Millisecond)))
		if err != nil {
			t.Fatal(err)
		}
		if !w.Log(&d, "ok") {
			t.Fatalf("decision %d not logged", i)
		}
	}
	recs, err := Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestReplayUnchanged(t *testing.T) {
	recs := routedLog(t, 8)
	rep, err := Replay(recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Replayed != 8 || rep.ChoiceChanged != 0 || rep.CostChanged != 0 || len(rep.Changes) != 0 {
		var b bytes.Buffer
		_ = WriteReport(&b, rep)
		t.Fatalf("unchanged core replay: %+v\n%s", rep, b.String())
	}
	if recs[0].CfgDigest == "" || recs[0].Worker != "2" {
		t.Fatalf("first record: digest %q worker %s, want a digest and worker 2", recs[0].CfgDigest, recs[0].Worker)
	}
}

func TestReplayKnobChange(t *testing.T) {
	recs := routedLog(t, 8)
	// Any prefill makes a worker busy: from r3 on, every worker has some.
	rep, err := Replay(recs, []byte(`{"BusyPrefillTokens":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if rep.ChoiceChanged == 0 {
		t.Fatalf("overlap credit 0 changed nothing: %+v", rep)
	}
	var b bytes.Buffer
	if err := WriteReport(&b, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "r3: choice w2 -> selector: all eligible workers overloaded") {
		t.Fatalf("report does not name r0's change:\n%s", b.String())
	}
	if rep, _ := Replay(recs, []byte(`{"OverlapCredit":0}`)); rep.CostChanged == 0 {
		t.Fatalf("overlap credit 0 changed no cost: %+v", rep)
	}
	if _, err := Replay(recs, []byte(`{"NoSuchKnob":1}`)); err == nil {
		t.Fatal("unknown knob accepted")
	}
}
