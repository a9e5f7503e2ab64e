package replica

import (
	"context"
	"fmt"
	"time"

	"github.com/kvrouter/kvrouter/internal/snapshot"
	"github.com/nats-io/nats.go/jetstream"
)

// snapshotFit is how a snapshot relates to the stream as last read.
type snapshotFit int

const (
	// snapshotFits: written on this stream, at or below its last
	// sequence: restore it and follow the stream after it.
	snapshotFits snapshotFit = iota
	// snapshotOtherStream: written on a stream since deleted and
	// recreated (another identity): its sequences mean nothing here.
	snapshotOtherStream
	// snapshotAhead: beyond the stream's last sequence as read. Either the
	// read is older than the snapshot (the stream info is read before the
	// snapshot, whose fetch can take seconds while the writer goes on
	// saving newer ones), or a node that just took the stream over has
	// not applied its whole log yet; or, for a snapshot without an
	// identity, an earlier stream.
	snapshotAhead
)

// fitSnapshot judges s against info. An identity (the stream's creation
// time) tells a recreated stream at once; a sequence ahead of the stream
// is only a reason to read the stream again (catchUp), never proof of a
// reset by itself.
func fitSnapshot(s *snapshot.Snapshot, info *jetstream.StreamInfo) snapshotFit {
	switch {
	case s.Stream != "" && s.Stream != streamIdentity(info):
		return snapshotOtherStream
	case s.Position.StreamSeq > info.State.LastSeq:
		return snapshotAhead
	}
	return snapshotFits
}

// snapshotPatience bounds how long a replica re-reads a stream that is
// behind the newest snapshot before it gives the snapshot up and replays
// the whole stream. NB: a NATS stream leader elected after a node was
// killed answers within a second or two once it has applied its log;
// replaying the whole stream instead costs far more than the wait.
const snapshotPatience = 10 * time.Second

// catchUp re-reads the stream (read) while s is ahead of it: at once,
// then with backoff, for up to patience. It returns the last info read
// (info when none was) and s's fit to it. A read error is retried like a
// stream still behind (a cluster electing a leader). It returns ctx's
// error when ctx ends first.
func catchUp(ctx context.Context, s *snapshot.Snapshot, info *jetstream.StreamInfo, patience time.Duration,
	read func(context.Context) (*jetstream.StreamInfo, error)) (*jetstream.StreamInfo, snapshotFit, error) {
	fit := fitSnapshot(s, info)
	deadline := time.Now().Add(patience)
	backoff := 20 * time.Millisecond
	for fit == snapshotAhead {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		rctx, cancel := context.WithTimeout(ctx, max(left, 100*time.Millisecond))
		in, err := read(rctx)
		cancel()
		if ctx.Err() != nil {
			return info, fit, ctx.Err()
		}
		if err == nil {
			if info, fit = in, fitSnapshot(s, in); fit != snapshotAhead {
				break
			}
		}
		select {
		case <-ctx.Done():
			return info, fit, ctx.Err()
		case <-time.After(min(backoff, max(time.Until(deadline), 0))):
		}
		backoff = min(2*backoff, time.Second)
	}
	return info, fit, nil
}

// catchUp is catchUp on the replica's stream: st when s fits it, else the
// stream as read again.
func (r *Replica) catchUp(ctx context.Context, s *snapshot.Snapshot, st jetstream.Stream) (jetstream.Stream, snapshotFit, error) {
	info := st.CachedInfo()
	if fitSnapshot(s, info) != snapshotAhead {
		return st, fitSnapshot(s, info), nil
	}
	r.cfg.Logger.Info("snapshot ahead of the stream as read; reading the stream again", "snapshot_seq", s.Position.StreamSeq,
		"stream_last_seq", info.State.LastSeq)
	r.setStatus(func(x *Status) {
		x.Detail = fmt.Sprintf("waiting for the stream to reach the snapshot's sequence %d", s.Position.StreamSeq)
	})
	latest := st
	_, fit, err := catchUp(ctx, s, info, snapshotPatience, func(ctx context.Context) (*jetstream.StreamInfo, error) {
		in, err := r.conn.JS.Stream(ctx, r.conn.Stream().Name)
		if err != nil {
			return nil, err
		}
		latest = in
		return in.CachedInfo(), nil
	})
	return latest, fit, err
}
