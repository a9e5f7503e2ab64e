package benchevents

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/snapshot"
	"github.com/kvrouter/kvrouter/kvevents"
)

// Config of one run.
type Config struct {
	Events         int     // events to publish; default 200000
	Rate           float64 // offered events/s; 0 = unpaced
	Workers        int     // default 16
	BlocksPerEvent int     // blocks per Stored event; default 16
	Format         eventplane.Format
	Linger         time.Duration // publisher batch linger; 0 = the publisher's default, <0 = none
	TCP            bool          // connect over loopback TCP instead of in-process
	CatchUp        bool          // also measure a replica's catch-up
	Progress       io.Writer     // progress lines; nil = none
}

// Report of one run.
type Report struct {
	Events       int     `json:"events"`
	Blocks       int64   `json:"blocks"`
	Seconds      float64 `json:"seconds"`
	EventsPerSec float64 `json:"events_per_sec"`
	BlocksPerSec float64 `json:"blocks_per_sec"`
	OfferedRate  float64 `json:"offered_rate"`
	LagP50Ms     float64 `json:"lag_p50_ms"`
	LagP90Ms     float64 `json:"lag_p90_ms"`
	LagP99Ms     float64 `json:"lag_p99_ms"`
	LagP999Ms    float64 `json:"lag_p999_ms"`
	LagMaxMs     float64 `json:"lag_max_ms"`
	// Publish call to the subscriber handing the event to the index's
	// writers (the transport's share of the lag).
	SubscriberP50Ms float64 `json:"subscriber_lag_p50_ms"`
	SubscriberP99Ms float64 `json:"subscriber_lag_p99_ms"`
	GOMAXPROCS      int     `json:"gomaxprocs"`
	Messages        uint64  `json:"messages"`    // stream messages published
	CPUSeconds      float64 `json:"cpu_seconds"` // process CPU (user+sys) during ingestion, all goroutines
	BlocksPerCPUSec float64 `json:"blocks_per_cpu_sec"`
	CatchUpBlocks   int64   `json:"catchup_blocks,omitempty"`
	CatchUpSeconds  float64 `json:"catchup_seconds,omitempty"`
	CatchUpPerSec   float64 `json:"catchup_blocks_per_sec,omitempty"`
	SnapshotEvents  int     `json:"snapshot_events,omitempty"`
}

func (c *Config) defaults() {
	if c.Events <= 0 {
		c.Events = 200000
	}
	if c.Workers <= 0 {
		c.Workers = 16
	}
	if c.BlocksPerEvent <= 0 {
		c.BlocksPerEvent = 16
	}
}

// gen makes a bounded workload: per worker, chains of 8 stores of
// BlocksPerEvent blocks, then one Removed of the chain's root (which drops
// the chain), so the index stays small however long the run.
type gen struct {
	bpe    int
	next   []uint64 // last id per worker
	depth  []int
	root   []uint64
	parent []uint64
	hash   uint64
}

func (g *gen) event(w int) kvevents.Event {
	g.next[w]++
	ev := kvevents.Event{WorkerID: uint64(w + 1), EventID: g.next[w]}
	if g.depth[w] == 8 {
		ev.Kind = kvevents.KindRemoved
		ev.Hashes = []uint64{g.root[w]}
		g.depth[w] = 0
		return ev
	}
	ev.Kind = kvevents.KindStored
	if g.depth[w] > 0 {
		ev.HasParent, ev.Parent = true, g.parent[w]
	}
	ev.Blocks = make([]kvevents.Block, g.bpe)
	for i := range ev.Blocks {
		g.hash++
		ev.Blocks[i] = kvevents.Block{Hash: g.hash, Local: g.hash * 0x9E3779B97F4A7C15}
	}
	if g.depth[w] == 0 {
		g.root[w] = ev.Blocks[0].Hash
	}
	g.parent[w] = ev.Blocks[g.bpe-1].Hash
	g.depth[w]++
	return ev
}

// Run runs one benchmark.
func Run(ctx context.Context, cfg Config) (Report, error) {
	cfg.defaults()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ncfg := eventplane.DefaultConfig()
	ncfg.Logger = quiet
	ncfg.LoopbackTCP = cfg.TCP
	conn, err := eventplane.StartEmbedded(ctx, ncfg)
	if err != nil {
		return Report{}, err
	}
	defer conn.Close()

	W := cfg.Workers
	per := cfg.Events/W + 2
	stamps := make([]atomic.Int64, W*per) // publish time by worker, id
	hist := hdrhistogram.New(1, 60_000_000, 3)
	var hmu sync.Mutex
	var blocks atomic.Int64
	var applied atomic.Int64
	icfg := indexer.ConcurrentConfig{Writers: max(runtime.GOMAXPROCS(0), 1)}
	icfg.Events.OnApplied = func(ev *kvevents.Event) {
		i := int(ev.WorkerID-1)*per + int(ev.EventID)
		if i < len(stamps) {
			if t0 := stamps[i].Load(); t0 != 0 {
				us := (time.Now().UnixNano() - t0) / 1000
				hmu.Lock()
				_ = hist.RecordValue(max(us, 1))
				hmu.Unlock()
			}
		}
		// Counted after recording: the run ends when every event counted.
		blocks.Add(int64(ev.NumBlocks()))
		applied.Add(1)
	}
	icfg.Events.OnRejected = func(ev *kvevents.Event, err error) { applied.Add(1) }
	idx := indexer.NewConcurrent(indexer.NewFlash(indexer.FlashConfig{}), icfg)
	pub := eventplane.NewPublisher(conn, eventplane.PublisherConfig{Format: cfg.Format, Linger: cfg.Linger, Logger: quiet})
	// Lag to the subscriber's hand-off (Sink.Apply), to tell the transport
	// from the index's writers.
	subHist := hdrhistogram.New(1, 60_000_000, 3)
	scfg := eventplane.SubscriberConfig{Logger: quiet}
	scfg.Events.OnApplied = func(ev *kvevents.Event) {
		i := int(ev.WorkerID-1)*per + int(ev.EventID)
		if i < len(stamps) {
			if t0 := stamps[i].Load(); t0 != 0 {
				us := (time.Now().UnixNano() - t0) / 1000
				hmu.Lock()
				_ = subHist.RecordValue(max(us, 1))
				hmu.Unlock()
			}
		}
	}
	sub := eventplane.NewSubscriber(conn, idx, scfg)
	snaps := snapshot.NewManager(conn, snapshot.Config{Logger: quiet})

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, f := range []func(context.Context) error{idx.Run, pub.Run, sub.Run} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = f(rctx) }()
	}
	defer wg.Wait()
	defer cancel()

	g := &gen{bpe: cfg.BlocksPerEvent, next: make([]uint64, W), depth: make([]int, W), root: make([]uint64, W), parent: make([]uint64, W)}
	// Pre-generate so generation cost is not measured.
	evs := make([]kvevents.Event, cfg.Events)
	for i := range evs {
		evs[i] = g.event(i % W)
	}
	var snapErr error
	var snapEvents int
	snapDone := make(chan struct{})
	if cfg.CatchUp {
		go func() {
			defer close(snapDone)
			for applied.Load() < int64(cfg.Events/2) && rctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
			s, err := snaps.Take(rctx, sub, idx.Index())
			if err == nil {
				snapEvents = len(s.Events)
			}
			snapErr = err
		}()
	} else {
		close(snapDone)
	}

	cpu0 := cpuSeconds()
	start := time.Now()
	lastProgress := start
	for i := range evs {
		if cfg.Rate > 0 {
			due := start.Add(time.Duration(float64(i) / cfg.Rate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
		ev := &evs[i]
		stamps[int(ev.WorkerID-1)*per+int(ev.EventID)].Store(time.Now().UnixNano())
		if err := pub.Publish(rctx, *ev); err != nil {
			return Report{}, err
		}
		if cfg.Progress != nil && i%4096 == 0 && time.Since(lastProgress) > time.Second {
			lastProgress = time.Now()
			fmt.Fprintf(cfg.Progress, "published %d/%d, applied %d\n", i, len(evs), applied.Load())
		}
	}
	for applied.Load() < int64(cfg.Events) {
		if err := ctx.Err(); err != nil {
			return Report{}, err
		}
		time.Sleep(200 * time.Microsecond)
	}
	el := time.Since(start).Seconds()
	cpu := cpuSeconds() - cpu0
	if err := pub.Flush(rctx); err != nil { // settle the last acks for Stats
		return Report{}, err
	}
	<-snapDone
	if snapErr != nil {
		return Report{}, fmt.Errorf("benchevents: snapshot: %w", snapErr)
	}
	hmu.Lock()
	r := Report{Events: cfg.Events, Blocks: blocks.Load(), Seconds: el, OfferedRate: cfg.Rate,
		EventsPerSec: float64(cfg.Events) / el, BlocksPerSec: float64(blocks.Load()) / el,
		LagP50Ms: float64(hist.ValueAtQuantile(50)) / 1000, LagP99Ms: float64(hist.ValueAtQuantile(99)) / 1000,
		LagP90Ms: float64(hist.ValueAtQuantile(90)) / 1000, LagP999Ms: float64(hist.ValueAtQuantile(99.9)) / 1000,
		Messages: pub.Stats().Messages, CPUSeconds: cpu,
		LagMaxMs:        float64(hist.Max()) / 1000,
		SubscriberP50Ms: float64(subHist.ValueAtQuantile(50)) / 1000,
		SubscriberP99Ms: float64(subHist.ValueAtQuantile(99)) / 1000,
		GOMAXPROCS:      runtime.GOMAXPROCS(0)}
	hmu.Unlock()
	if cpu > 0 {
		r.BlocksPerCPUSec = float64(r.Blocks) / cpu
	}
	if cfg.CatchUp {
		cancel() // stop the first replica: the machine's cores go to the new one
		wg.Wait()
		if err := catchUp(ctx, conn, snaps, &r, quiet); err != nil {
			return r, err
		}
		r.SnapshotEvents = snapEvents
	}
	return r, nil
}

// catchUp times a new replica: restore the newest snapshot, replay the
// stream from its sequence, until ready.
func catchUp(ctx context.Context, conn *eventplane.Conn, snaps *snapshot.Manager, r *Report, log *slog.Logger) error {
	var blocks atomic.Int64
	icfg := indexer.ConcurrentConfig{Writers: max(runtime.GOMAXPROCS(0), 1)}
	icfg.Events.OnApplied = func(ev *kvevents.Event) { blocks.Add(int64(ev.NumBlocks())) }
	idx := indexer.NewConcurrent(indexer.NewFlash(indexer.FlashConfig{}), icfg)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(1)
	go func() { defer wg.Done(); _ = idx.Run(cctx) }()
	start := time.Now()
	pos, err := snaps.Restore(cctx, idx)
	if err != nil {
		return err
	}
	sub := eventplane.NewSubscriber(conn, idx, eventplane.SubscriberConfig{Start: pos, Logger: log})
	wg.Add(1)
	go func() { defer wg.Done(); _ = sub.Run(cctx) }()
	select {
	case <-sub.Ready():
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := idx.Flush(cctx); err != nil {
		return err
	}
	r.CatchUpSeconds = time.Since(start).Seconds()
	r.CatchUpBlocks = blocks.Load()
	r.CatchUpPerSec = float64(r.CatchUpBlocks) / r.CatchUpSeconds
	return nil
}
