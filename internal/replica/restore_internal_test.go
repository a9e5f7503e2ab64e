package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/snapshot"
	"github.com/nats-io/nats.go/jetstream"
)

var (
	created  = time.Date(2026, 12, 1, 17, 20, 48, 314249178, time.UTC)
	recreate = created.Add(time.Minute)
)

func info(at time.Time, last uint64) *jetstream.StreamInfo {
	return &jetstream.StreamInfo{Created: at, State: jetstream.StreamState{FirstSeq: 1, LastSeq: last}}
}

func snap(stream string, seq uint64) *snapshot.Snapshot {
	return &snapshot.Snapshot{Stream: stream, Position: eventplane.Position{StreamSeq: seq}}
}

func TestFitSnapshot(t *testing.T) {
	id := streamIdentity(info(created, 0))
	for _, c := range []struct {
		name string
		s    *snapshot.Snapshot
		info *jetstream.StreamInfo
		want snapshotFit
	}{
		{"same stream, below its last", snap(id, 380), info(created, 381), snapshotFits},
		{"same stream, at its last", snap(id, 381), info(created, 381), snapshotFits},
		{"empty snapshot of an empty stream", snap(id, 0), info(created, 0), snapshotFits},
		// The e2e failures: stream info read before a slow snapshot
		// fetch (or from a leader not yet current) is behind the
		// snapshot of the same stream.
		{"same stream, info older than the snapshot", snap(id, 384), info(created, 381), snapshotAhead},
		{"same stream, leader behind by much", snap(id, 1956), info(created, 687), snapshotAhead},
		{"recreated stream, below", snap(id, 10), info(recreate, 400), snapshotOtherStream},
		{"recreated stream, ahead", snap(id, 400), info(recreate, 10), snapshotOtherStream},
		{"no identity, below", snap("", 380), info(created, 381), snapshotFits},
		{"no identity, ahead", snap("", 400), info(recreate, 10), snapshotAhead},
	} {
		if got := fitSnapshot(c.s, c.info); got != c.want {
			t.Errorf("%s: fit %d, want %d", c.name, got, c.want)
		}
	}
}

// reads is a fake stream: each read answers the next info (or error),
// the last one for good.
type reads struct {
	answers []any // *jetstream.StreamInfo or error
	n       int
}

func (r *reads) read(context.Context) (*jetstream.StreamInfo, error) {
	a := r.answers[min(r.n, len(r.answers)-1)]
	r.n++
	if err, ok := a.(error); ok {
		return nil, err
	}
	return a.(*jetstream.StreamInfo), nil
}

// A snapshot ahead of the stream as read is restored once a read shows the
// stream reached it (the stale-last-sequence case), and given up only when
// the stream stays behind for the whole patience or turns out recreated.
func TestCatchUp(t *testing.T) {
	id := streamIdentity(info(created, 0))
	s := snap(id, 384)
	stale := info(created, 381)
	for _, c := range []struct {
		name     string
		answers  []any
		patience time.Duration
		want     snapshotFit
		reads    int    // exact reads, or the minimum when the stream never catches up
		last     uint64 // LastSeq of the info returned
	}{
		{"caught up at the first read", []any{info(created, 390)}, time.Minute, snapshotFits, 1, 390},
		{"stale twice, then caught up", []any{info(created, 381), info(created, 383), info(created, 384)}, time.Minute, snapshotFits, 3, 384},
		{"no leader yet, then caught up", []any{errors.New("nats: timeout"), info(created, 385)}, time.Minute, snapshotFits, 2, 385},
		{"recreated meanwhile", []any{info(created, 382), info(recreate, 3)}, time.Minute, snapshotOtherStream, 2, 3},
		{"never catches up", []any{info(created, 381)}, 50 * time.Millisecond, snapshotAhead, 1, 381},
		{"never answers", []any{errors.New("nats: timeout")}, 50 * time.Millisecond, snapshotAhead, 1, 381},
	} {
		r := &reads{answers: c.answers}
		got, fit, err := catchUp(context.Background(), s, stale, c.patience, r.read)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if fit != c.want || got.State.LastSeq != c.last {
			t.Errorf("%s: fit %d with last seq %d, want %d with %d", c.name, fit, got.State.LastSeq, c.want, c.last)
		}
		if c.want == snapshotAhead && r.n < c.reads || c.want != snapshotAhead && r.n != c.reads {
			t.Errorf("%s: %d reads, want %d", c.name, r.n, c.reads)
		}
	}

	// A snapshot that fits is not read again; a cancelled wait says so.
	r := &reads{answers: []any{errors.New("unused")}}
	if _, fit, err := catchUp(context.Background(), snap(id, 381), stale, time.Minute, r.read); fit != snapshotFits || err != nil || r.n != 0 {
		t.Errorf("fitting snapshot: fit %d, err %v, %d reads", fit, err, r.n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := catchUp(ctx, s, stale, time.Minute, (&reads{answers: []any{stale}}).read); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err %v", err)
	}
}
