package zmqsub_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

const python = "/usr/bin/python3"

// needPython skips (locally) or fails (CI=true) without Debian's
// python3-zmq and python3-msgpack.
func needPython(t *testing.T) {
	t.Helper()
	if err := exec.Command(python, "-c", "import zmq, msgpack").Run(); err != nil {
		msg := "libzmq interop test needs /usr/bin/python3 with python3-zmq and python3-msgpack (run scripts/setup-test-deps): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// startPublisher runs testdata/vllm_pub.py and returns its PUB and replay
// endpoints; the script exits when the test ends (stdin closed).
func startPublisher(t *testing.T, args ...string) (pub, replay string) {
	t.Helper()
	pub, replay, _ = startPub(t, args...)
	return pub, replay
}

// startStoppable starts a publisher and returns a func that stops it (and
// waits for its exit).
func startStoppable(t *testing.T, args ...string) (stop func()) {
	t.Helper()
	_, _, stop = startPub(t, args...)
	return stop
}

func startPub(t *testing.T, args ...string) (pub, replay string, stop func()) {
	t.Helper()
	cmd := exec.Command(python, append([]string{"testdata/vllm_pub.py"}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() { once.Do(func() { _ = stdin.Close(); _ = cmd.Wait() }) }
	t.Cleanup(stop)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("publisher: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	var pp, rp int
	if _, err := fmt.Sscanf(line, "PUB %d REPLAY %d", &pp, &rp); err != nil {
		t.Fatalf("publisher said %q: %v", line, err)
	}
	return fmt.Sprintf("tcp://127.0.0.1:%d", pp), fmt.Sprintf("tcp://127.0.0.1:%d", rp), stop
}

type result struct {
	hash   uint64
	stats  zmqsub.Stats
	idx    indexer.Index
	ingest map[string]uint64 // Config.OnIngest's counts by reason
}

// ingest runs a Subscriber on one python publisher until want messages
// were handled (received live or replayed).
func ingest(t *testing.T, want uint64, useReplay bool, args ...string) result {
	return ingestInto(t, indexer.NewRadix(indexer.RadixConfig{}), want, useReplay, args...)
}

// ingestInto is ingest into idx.
func ingestInto(t *testing.T, idx indexer.Index, want uint64, useReplay bool, args ...string) result {
	pub, replay := startPublisher(t, args...)
	if !useReplay {
		replay = ""
	}
	var mu sync.Mutex
	counts := map[string]uint64{}
	sink := zmqsub.SinkFunc(func(ev *kvevents.Event) error { mu.Lock(); defer mu.Unlock(); return idx.Apply(ev) })
	sub := zmqsub.New(zmqsub.Config{BlockSize: 4, Logger: eventplanetest.Quiet,
		Sources:  []zmqsub.Source{{WorkerID: 7, Endpoint: pub, Replay: replay}},
		OnIngest: func(_ uint64, reason string, n uint64) { mu.Lock(); defer mu.Unlock(); counts[reason] += n }}, sink)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := sub.Run(ctx); err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	eventplanetest.WaitFor(t, 30*time.Second, "messages ingested", func() bool {
		st := sub.Stats()
		return st.Messages+st.Replayed >= want
	})
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return result{hash: eventplanetest.DumpHash(idx.Dump()), stats: sub.Stats(), idx: idx, ingest: counts}
}

func TestLibzmqInterop(t *testing.T) {
	needPython(t)
	full := ingest(t, 6, true)
	if st := full.stats; st.DecodeError != 0 || st.Gaps != 0 || st.Resyncs != 0 || st.Events < 7 {
		t.Fatalf("stats %+v", st)
	}
	// The prompt of batches 0..5: 12 blocks of 4 tokens from 1000, one
	// chain; the last batch evicted the last block, so worker 7 holds 11.
	toks := make([]uint32, 48)
	for i := range toks {
		toks[i] = uint32(1000 + i)
	}
	locals := kvhash.LocalHashes(toks, 4, kvhash.Seed("", ""))
	if got := full.idx.FindMatches(locals).Get(kvevents.Worker{ID: 7}); got != 11 {
		t.Fatalf("overlap = %d, want 11 (index: %v)", got, full.idx.Dump())
	}
	if st := full.idx.Stats(); st.Blocks != 11 || st.UnknownRemove != 1 || st.Rejected != 0 {
		t.Fatalf("index stats %+v", st)
	}

	// The same stream with seq 2 missing live: recovered by replay.
	gap := ingest(t, 6, true, "--skip", "2")
	if st := gap.stats; st.Gaps != 1 || st.Replayed != 1 || st.Resyncs != 0 {
		t.Fatalf("gap run stats %+v", st)
	}
	if gap.hash != full.hash {
		t.Fatalf("index after replayed gap %x differs from the gap-free run %x", gap.hash, full.hash)
	}

	// Without a replay endpoint the gap clears the worker: a resync, and
	// the blocks before the gap are gone (the rest hang off unknown parents).
	lost := ingest(t, 5, false, "--skip", "2")
	if st := lost.stats; st.Gaps != 1 || st.Resyncs != 1 || st.Replayed != 0 {
		t.Fatalf("unrecoverable gap stats %+v", st)
	}
	if got := lost.idx.FindMatches(locals).Get(kvevents.Worker{ID: 7}); got != 0 {
		t.Fatalf("overlap after resync = %d, want 0", got)
	}
}

// TestLibzmqBlockSizeRefused: a vLLM publisher whose block_size (8) is not
// the subscriber's (4) has its stored blocks refused, counted in
// Stats.BlockSize (and logged); none reaches the index.
func TestLibzmqBlockSizeRefused(t *testing.T) {
	needPython(t)
	r := ingest(t, 6, false, "--block-size", "8")
	if st := r.stats; st.BlockSize == 0 || st.Messages < 6 {
		t.Fatalf("stats %+v: want block-size refusals", st)
	}
	if st := r.idx.Stats(); st.Blocks != 0 {
		t.Fatalf("index holds %d blocks of a mismatched block size: %v", st.Blocks, r.idx.Dump())
	}
}

// TestLibzmqHybridGroups: a hybrid model's events in vLLM's byte layout
// (group_idx, kv_cache_spec_kind, kv_cache_spec_sliding_window; removes
// naming the group index alone) published on real libzmq reach the
// router's group overlay (indexer.Groups, DESIGN.md §13): each group holds
// its blocks, the joint match is what every group allows, and the events
// of a kind the router does not model (chunked_local_attention) are
// counted as unknown_group, never filed as full attention.
func TestLibzmqHybridGroups(t *testing.T) {
	needPython(t)
	g := indexer.NewGroups(indexer.NewRadix(indexer.RadixConfig{}), indexer.GroupsConfig{BlockSize: 4})
	r := ingestInto(t, g, 6, false, "--hybrid")
	// 6 batches of 4 stores, and 3 + 2 removes in the last one.
	if st := r.stats; st.DecodeError != 0 || st.Gaps != 0 || st.UnknownGroup != 6 || st.Events != 6*3+4 {
		t.Fatalf("stats %+v: want 6 unknown-group stores skipped, 22 events applied", st)
	}
	if r.ingest["unknown_group"] != 6 {
		t.Errorf("OnIngest counts %v: want unknown_group 6", r.ingest)
	}
	w := kvevents.Worker{ID: 7}
	want := []indexer.GroupBlocks{
		{Group: kvevents.Group{Index: 1, Kind: kvevents.GroupSliding, Window: 5}, Blocks: 11},
		{Group: kvevents.Group{Index: 2, Kind: kvevents.GroupState}, Blocks: 5},
	}
	got := g.WorkerGroups(w)
	if len(got) != len(want) {
		t.Fatalf("groups %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Group != want[i].Group || got[i].Blocks != want[i].Blocks {
			t.Errorf("group %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	toks := make([]uint32, 48)
	for i := range toks {
		toks[i] = uint32(1000 + i)
	}
	locals := kvhash.LocalHashes(toks, 4, kvhash.Seed("", ""))
	// Full attention holds blocks 1-11 (block 12 evicted); the window
	// (ceil(4/4) = 1 block) needs block L, the state group holds the
	// checkpoints 2, 4, 6, 8, 12 (10 removed) and the window lost block 8:
	// L = 6.
	m, ok := g.Explain(w, locals)
	if !ok || m.Full != 11 || m.Blocks != 6 || g.FindMatches(locals).Get(w) != 6 {
		t.Fatalf("explain %+v (ok %v), lookup %d: want full 11, joint 6", m, ok, g.FindMatches(locals).Get(w))
	}
	full := indexer.NewGroups(indexer.NewRadix(indexer.RadixConfig{}), indexer.GroupsConfig{BlockSize: 4, FullOnly: true})
	for _, ev := range g.Dump() {
		if err := full.Apply(&ev); err != nil {
			t.Fatal(err)
		}
	}
	if got := full.FindMatches(locals).Get(w); got != 11 {
		t.Errorf("full-only overlap %d, want 11 (full attention alone)", got)
	}
}
