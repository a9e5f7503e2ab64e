package benchindex

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/trace"
)

// GenOptions shape stream generation.
type GenOptions struct {
	Workers int    // W, >= 1
	Seed    uint64 // seeds the partition (PCG(seed, seed^golden))
	// TokensPerID is how many tokens one trace hash id becomes (see
	// trace.Tokens). trace.TraceBlockTokens (512) keeps the recorded prompt
	// lengths; BlockSize reproduces Dynamo's one-block-per-id method.
	TokensPerID int
	// Engine is the mocker configuration of every worker; Worker and
	// SpeedupRatio are overwritten (worker index, 0).
	Engine mocker.Config
	// Parallel is the number of engines simulated at once; 0 = GOMAXPROCS.
	Parallel int
	// Progress, when set, is called with the number of requests whose
	// simulation finished since the last call; safe for concurrent use.
	Progress func(n int)
}

// GenStats describes a generation run.
type GenStats struct {
	Wall    time.Duration
	Skipped int // requests the engine refused (too long for its KV cache)
}

// Generate turns trace records into a Stream: each record becomes a lookup
// of its prompt's local hashes on the worker a seeded partition gives it,
// and each worker's share runs through its own mocker engine on simulated
// time (speedup 0) to produce that worker's real KV events, stamped with the
// simulated start of the pass that emitted them (vLLM publishes a step's
// events as the step is scheduled). Requests arrive at their trace
// timestamps, so lookups and events share one clock. Events are in
// timeline order (see layoutByTime).
func Generate(ctx context.Context, recs []trace.Record, opt GenOptions) (*Stream, GenStats, error) {
	start := time.Now()
	if opt.Workers < 1 {
		return nil, GenStats{}, fmt.Errorf("benchindex: workers %d must be >= 1", opt.Workers)
	}
	if opt.TokensPerID <= 0 {
		return nil, GenStats{}, fmt.Errorf("benchindex: tokens per id %d must be positive", opt.TokensPerID)
	}
	ecfg := opt.Engine
	ecfg.SpeedupRatio = 0
	if err := ecfg.Validate(); err != nil {
		return nil, GenStats{}, fmt.Errorf("benchindex: engine config: %w", err)
	}
	rng := rand.New(rand.NewPCG(opt.Seed, opt.Seed^0x9e3779b97f4a7c15))
	assign, err := trace.Assign(len(recs), opt.Workers, rng)
	if err != nil {
		return nil, GenStats{}, fmt.Errorf("benchindex: partition: %w", err)
	}
	byWorker := make([][]int, opt.Workers)
	for i, w := range assign {
		byWorker[w] = append(byWorker[w], i)
	}

	s := &Stream{Workers: opt.Workers, Lookups: make([]Lookup, len(recs))}
	perWorker := make([][]TimedEvent, opt.Workers)
	skipped := make([]int, opt.Workers)
	par := opt.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, par)
	for g := range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				w := int(next.Add(1) - 1)
				if w >= opt.Workers || ctx.Err() != nil {
					return
				}
				evs, sk, err := simulate(ctx, recs, byWorker[w], w, ecfg, opt.TokensPerID, s.Lookups, opt.Progress)
				if err != nil {
					errs[g] = fmt.Errorf("benchindex: worker %d: %w", w, err)
					return
				}
				perWorker[w], skipped[w] = evs, sk
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return nil, GenStats{}, err
	}
	st := GenStats{}
	n := 0
	for w := range perWorker {
		n += len(perWorker[w])
		st.Skipped += skipped[w]
	}
	s.Events = make([]TimedEvent, 0, n)
	for w := range perWorker {
		s.Events = append(s.Events, perWorker[w]...)
		perWorker[w] = nil
	}
	s.Events = layoutByTime(s.Events)
	st.Wall = time.Since(start)
	return s, st, nil
}

// simulate runs one worker's requests through a fresh engine and fills
// their lookups. Requests are added when simulated time reaches their
// arrival; between arrivals the engine runs pass after pass, and an idle
// engine jumps to the next arrival.
func simulate(ctx context.Context, recs []trace.Record, mine []int, w int, cfg mocker.Config, tokensPerID int,
	lookups []Lookup, progress func(int)) ([]TimedEvent, int, error) {
	cfg.Worker = kvevents.Worker{ID: uint64(w)}
	eng := mocker.New(cfg)
	seed := cfg.HashSeed
	if seed == 0 {
		seed = kvhash.DefaultSeed
	}
	var out []TimedEvent
	skipped, done := 0, 0
	var now time.Duration
	i := 0
	for i < len(mine) || eng.Busy() {
		if !eng.Busy() && i < len(mine) {
			now = max(now, recs[mine[i]].Timestamp)
		}
		for i < len(mine) && recs[mine[i]].Timestamp <= now {
			q := mine[i]
			rec := &recs[q]
			toks := trace.Tokens(nil, rec, tokensPerID)
			lookups[q] = Lookup{At: rec.Timestamp, Worker: w, Request: q, Locals: kvhash.LocalHashes(toks, cfg.BlockSize, seed)}
			err := eng.Add(mocker.Request{ID: uint64(q), Tokens: toks, MaxOutputTokens: max(rec.OutputLength, 1), Arrival: rec.Timestamp})
			switch {
			case errors.Is(err, mocker.ErrTooLong), errors.Is(err, mocker.ErrBadRequest):
				skipped++
				done++
			case err != nil:
				return nil, 0, fmt.Errorf("add request %d: %w", q, err)
			}
			i++
		}
		if !eng.Busy() {
			continue
		}
		res := eng.Step(now)
		for k := range res.Events {
			out = append(out, TimedEvent{At: res.Start, Worker: w, Event: res.Events[k]})
		}
		done += len(res.Finished)
		if res.Idle || res.Duration <= 0 {
			// Cannot happen with a busy engine; guard against a stall.
			return nil, 0, fmt.Errorf("engine stalled at %v (idle=%v)", now, res.Idle)
		}
		now = res.End()
		if done >= 64 {
			if progress != nil {
				progress(done)
			}
			done = 0
			if ctx.Err() != nil {
				return nil, 0, ctx.Err()
			}
		}
	}
	if progress != nil && done > 0 {
		progress(done)
	}
	return out, skipped, nil
}

// layoutByTime returns evs in timeline order (time, then worker; a
// worker's events keep their order) with their blocks and hashes copied
// into two arrays in that order, so that a replay reads the stream front
// to back, as a router reads events fresh off the wire. Laid out by worker,
// as the engines produce them, every event of a time-ordered replay was a
// cache miss of its own before its first block.
func layoutByTime(evs []TimedEvent) []TimedEvent {
	slices.SortStableFunc(evs, func(a, b TimedEvent) int {
		if c := cmp.Compare(a.At, b.At); c != 0 {
			return c
		}
		return cmp.Compare(a.Worker, b.Worker)
	})
	nb, nh := 0, 0
	for i := range evs {
		nb += len(evs[i].Event.Blocks)
		nh += len(evs[i].Event.Hashes)
	}
	blocks := make([]kvevents.Block, 0, nb)
	hashes := make([]uint64, 0, nh)
	for i := range evs {
		ev := &evs[i].Event
		if ev.Blocks != nil {
			n := len(blocks)
			blocks = append(blocks, ev.Blocks...)
			ev.Blocks = blocks[n:len(blocks):len(blocks)]
		}
		if ev.Hashes != nil {
			n := len(hashes)
			hashes = append(hashes, ev.Hashes...)
			ev.Hashes = hashes[n:len(hashes):len(hashes)]
		}
	}
	return evs
}
