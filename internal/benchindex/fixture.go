package benchindex

import (
	"math/rand/v2"
	"time"

	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/trace"
)

// FixtureTrace is the agreement fixture: n requests (the tests use 1,000)
// from a seeded generator, shaped like a conversation trace: a few shared
// system prompts of several lengths, conversations that resend their
// earlier turns and add one, and one-off prompts, arriving densely enough
// that FixtureEngine's small KV cache evicts. Every index (radix, flash,
// sharded, and the llm-d peer in bench/peers) must return identical scores
// on its stream (TestFixtureScoresAgree, and bench/peers' own test).
func FixtureTrace(n int, seed uint64) []trace.Record {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	next := uint64(1000)
	fresh := func(k int) []uint64 {
		ids := make([]uint64, k)
		for i := range ids {
			ids[i] = next
			next++
		}
		return ids
	}
	systems := [][]uint64{fresh(1), fresh(2), fresh(3), fresh(5)}
	var convs [][]uint64
	recs := make([]trace.Record, 0, n)
	for i := range n {
		var ids []uint64
		switch k := rng.IntN(10); {
		case k < 5 && len(convs) > 0: // next turn of a conversation
			c := rng.IntN(len(convs))
			convs[c] = append(convs[c], fresh(1+rng.IntN(2))...)
			ids = convs[c]
		case k < 8: // new conversation on a system prompt
			ids = append(append([]uint64(nil), systems[rng.IntN(len(systems))]...), fresh(1+rng.IntN(3))...)
			convs = append(convs, ids)
		default: // one-off prompt
			ids = fresh(1 + rng.IntN(4))
		}
		if len(ids) > 12 { // keep prompts within the fixture engine's cache
			ids = ids[:12]
		}
		ids = append([]uint64(nil), ids...)
		recs = append(recs, trace.Record{
			Timestamp:    time.Duration(i*15) * time.Millisecond,
			InputLength:  len(ids)*8 - rng.IntN(8),
			OutputLength: 1 + rng.IntN(16),
			HashIDs:      ids,
		})
	}
	return recs
}

// FixtureEngine is the mocker configuration for FixtureTrace (8 tokens per
// trace hash id, 4-token blocks, a cache small enough to evict).
func FixtureEngine() mocker.Config {
	e := mocker.DefaultConfig()
	e.NumBlocks, e.BlockSize, e.MaxNumSeqs, e.MaxNumBatchedTokens = 64, 4, 4, 48
	return e
}

// FixtureTokensPerID is the tokens per trace hash id FixtureTrace is
// generated with.
const FixtureTokensPerID = 8
