package snapshot_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/snapshot"
	"github.com/kvrouter/kvrouter/kvevents"
)

// Latest skips a newest snapshot whose object reads back corrupt (its
// chunk replaced, so the store's digest check fails) or does not decode,
// and restores the next older one; with none readable it fails.
func TestLatestSkipsUnreadable(t *testing.T) {
	ctx := context.Background()
	conn := eventplanetest.Embedded(t)
	var logs bytes.Buffer
	m := snapshot.NewManager(conn, snapshot.Config{Bucket: "snaps", Keep: 5,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	g := eventplanetest.NewGen(3, 2, 2)
	save := func(seq uint64) {
		t.Helper()
		s := &snapshot.Snapshot{Position: eventplane.Position{StreamSeq: seq}}
		for len(s.Events) < 30 {
			if ev := g.Next(); ev.Kind == kvevents.KindStored {
				ev.EventID = 0
				s.Events = append(s.Events, ev)
			}
		}
		if err := m.Save(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	latest := func() (uint64, error) {
		t.Helper()
		s, err := m.Latest(ctx)
		if s == nil {
			return 0, err
		}
		return s.Position.StreamSeq, err
	}
	save(10)
	save(20)
	obs, err := conn.JS.ObjectStore(ctx, "snaps")
	if err != nil {
		t.Fatal(err)
	}
	// Corrupt snapshot 20's stored bytes: purge its chunks and publish as
	// many bytes of other content on the chunk subject.
	info, err := obs.GetInfo(ctx, fmt.Sprintf("index-%020d", 20))
	if err != nil {
		t.Fatal(err)
	}
	st, err := conn.JS.Stream(ctx, "OBJ_snaps")
	if err != nil {
		t.Fatal(err)
	}
	subj := "$O.snaps.C." + info.NUID
	if err := st.Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.JS.Publish(ctx, subj, bytes.Repeat([]byte{'x'}, int(info.Size))); err != nil {
		t.Fatal(err)
	}
	if seq, err := latest(); err != nil || seq != 10 {
		t.Fatalf("corrupt newest: Latest = %d, %v; want the older snapshot 10", seq, err)
	}
	if !strings.Contains(logs.String(), "digests do not match") {
		t.Fatalf("no warning naming the corrupt object; log:\n%s", logs.String())
	}

	// An object that reads back intact but is not a snapshot.
	if _, err := obs.PutBytes(ctx, fmt.Sprintf("index-%020d", 30), []byte("not a snapshot")); err != nil {
		t.Fatal(err)
	}
	if seq, err := latest(); err != nil || seq != 10 {
		t.Fatalf("undecodable newest: Latest = %d, %v; want 10", seq, err)
	}
	save(40)
	if seq, err := latest(); err != nil || seq != 40 {
		t.Fatalf("after a good save: Latest = %d, %v; want 40", seq, err)
	}

	// Nothing readable: the newest one's error.
	bad := snapshot.NewManager(conn, snapshot.Config{Bucket: "bad", Logger: eventplanetest.Quiet})
	if err := bad.Save(ctx, &snapshot.Snapshot{Position: eventplane.Position{StreamSeq: 1}}); err != nil {
		t.Fatal(err)
	}
	bobs, err := conn.JS.ObjectStore(ctx, "bad")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bobs.PutBytes(ctx, fmt.Sprintf("index-%020d", 1), []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	if s, err := bad.Latest(ctx); err == nil || s != nil || !strings.Contains(err.Error(), "index-00000000000000000001") {
		t.Fatalf("no readable snapshot: Latest = %v, %v; want the object's error", s, err)
	}
}
