package main

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/llm-d/llm-d-kv-cache/pkg/kvcache"
	"github.com/llm-d/llm-d-kv-cache/pkg/kvcache/kvblock"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kvrouter/kvrouter/internal/benchindex"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// llmdKeys holds, per lookup of a stream, the request keys llm-d would
// compute for the prompt: its keys are prefix-chained hashes of the block
// tokens (FNV-64a over CBOR of [parent, tokens, extra] in its
// TokenProcessor). Our router sequence hash (kvhash.SeqNext chained over the
// local hashes) is the same function of the same prefix, so it is the
// equivalent key; computing it here, before the replay, keeps hashing out
// of both sides' timings, as our side gets precomputed local hashes.
func llmdKeys(s *benchindex.Stream) [][]kvblock.BlockHash {
	keys := make([][]kvblock.BlockHash, len(s.Lookups))
	for i := range s.Lookups {
		seq := kvhash.SeqHashes(s.Lookups[i].Locals)
		k := make([]kvblock.BlockHash, len(seq))
		for j, h := range seq {
			k[j] = kvblock.BlockHash(h)
		}
		keys[i] = k
	}
	return keys
}

// llmdTarget drives llm-d-kv-cache's in-memory index (kvblock.InMemoryIndex,
// as shipped, default config) the way its kvevents.Pool and
// kvcache.Indexer.ScoreTokens do: events go to sticky per-worker writer
// goroutines with bounded queues (the Pool shards by pod too), lookups run
// inline as Lookup + LongestPrefixScorer.Score.
type llmdTarget struct {
	idx    *kvblock.InMemoryIndex
	scorer kvcache.KVBlockScorer
	keys   [][]kvblock.BlockHash
	pods   []string

	queues   []chan *kvevents.Event
	queued   atomic.Int64
	rejected atomic.Uint64
	applied  atomic.Uint64

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

const llmdQueueSize = 1024 // same as indexer.DefaultQueueSize

// newLLMDTarget builds the peer. podsPerKey 0 keeps llm-d's default
// (kvblock.DefaultInMemoryIndexConfig: 10 pods per key, 1e8 keys).
func newLLMDTarget(keys [][]kvblock.BlockHash, workers, writers, podsPerKey int) (*llmdTarget, error) {
	icfg := kvblock.DefaultInMemoryIndexConfig()
	if podsPerKey > 0 {
		icfg.PodCacheSize = podsPerKey
	}
	idx, err := kvblock.NewInMemoryIndex(icfg)
	if err != nil {
		return nil, err
	}
	sc, err := kvcache.NewKVBlockScorer(kvcache.DefaultKVBlockScorerConfig())
	if err != nil {
		return nil, err
	}
	t := &llmdTarget{idx: idx, scorer: sc, keys: keys, ctx: context.Background()}
	for w := range workers {
		t.pods = append(t.pods, "worker-"+strconv.Itoa(w))
	}
	t.queues = make([]chan *kvevents.Event, max(writers, 1))
	for i := range t.queues {
		t.queues[i] = make(chan *kvevents.Event, llmdQueueSize)
	}
	return t, nil
}

func (t *llmdTarget) Start(ctx context.Context, _ int) error {
	t.ctx, t.cancel = context.WithCancel(ctx)
	for _, q := range t.queues {
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			for ev := range q {
				t.apply(ev)
				t.queued.Add(-1)
			}
		}()
	}
	return nil
}

func (t *llmdTarget) Submit(ev *kvevents.Event) error {
	t.queued.Add(1)
	t.queues[ev.WorkerID%uint64(len(t.queues))] <- ev
	return nil
}

func (t *llmdTarget) Preload(ev *kvevents.Event) error {
	t.apply(ev)
	return nil
}

// apply mirrors kvevents.Pool.processEventBatch for one event of pod p.
func (t *llmdTarget) apply(ev *kvevents.Event) {
	ctx := t.ctx
	entries := []kvblock.PodEntry{{PodIdentifier: t.pods[ev.WorkerID], DeviceTier: "gpu"}}
	switch ev.Kind {
	case kvevents.KindStored:
		if len(ev.Blocks) == 0 {
			return
		}
		engineKeys := make([]kvblock.BlockHash, len(ev.Blocks))
		for i, b := range ev.Blocks {
			engineKeys[i] = kvblock.BlockHash(b.Hash)
		}
		var prev uint64
		if ev.HasParent {
			rk, err := t.idx.GetRequestKey(ctx, kvblock.BlockHash(ev.Parent))
			if err != nil {
				t.rejected.Add(1) // the Pool logs and skips the event
				return
			}
			prev = uint64(rk)
		}
		requestKeys := make([]kvblock.BlockHash, len(ev.Blocks))
		for i, b := range ev.Blocks {
			if i == 0 && !ev.HasParent {
				prev = b.Local // kvhash: seq[0] = local[0]
			} else {
				prev = kvhash.SeqNext(prev, b.Local)
			}
			requestKeys[i] = kvblock.BlockHash(prev)
		}
		if err := t.idx.Add(ctx, engineKeys, requestKeys, entries); err != nil {
			t.rejected.Add(1)
			return
		}
	case kvevents.KindRemoved:
		for _, h := range ev.Hashes {
			_ = t.idx.Evict(ctx, kvblock.BlockHash(h), kvblock.EngineKey, entries)
		}
	case kvevents.KindCleared:
		_ = t.idx.Clear(ctx, entries[0].PodIdentifier)
	}
	t.applied.Add(1)
}

var noPods sets.Set[string]

// Lookup is what kvcache.Indexer.ScoreTokens does after hashing: Lookup on
// the index, then longest-prefix scoring per pod.
func (t *llmdTarget) Lookup(_, q int, _ []uint64) int {
	keys := t.keys[q]
	if len(keys) == 0 {
		return 0
	}
	m, err := t.idx.Lookup(t.ctx, keys, noPods)
	if err != nil {
		return 0
	}
	scores, err := t.scorer.Score(t.ctx, keys, m)
	if err != nil {
		return 0
	}
	best := 0.0
	for _, s := range scores {
		best = max(best, s)
	}
	return int(best)
}

func (t *llmdTarget) Queued() int64 { return t.queued.Load() }

func (t *llmdTarget) Finish(context.Context) (benchindex.Final, error) {
	for _, q := range t.queues {
		close(q)
	}
	t.wg.Wait()
	t.cancel()
	// Skipped stores (unknown parent) are reported through Final.Rejected;
	// the Pool only logs them.
	return benchindex.Final{Applied: t.applied.Load(), Rejected: t.rejected.Load()}, nil
}
