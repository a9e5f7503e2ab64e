package snapshot_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/internal/snapshot"
	"github.com/kvrouter/kvrouter/kvevents"
)

// craftedHeaders claim more events than their bodies hold; the first made
// Decode panic (makeslice: cap out of range) before the bound.
var craftedHeaders = [][]byte{
	[]byte(`{"stream_seq":9,"events":4611686018427387904}` + "\n\x91"),
	[]byte(`{"stream_seq":9,"events":2000000000}` + "\n\x91"),
	[]byte(`{"stream_seq":9,"events":-1}` + "\n"),
	[]byte(`{"stream_seq":9,"events":3}` + "\n\x93\x80\x80\x80"),
}

func TestDecodeRefusesCountsBeyondBody(t *testing.T) {
	for _, b := range craftedHeaders[:1] {
		if _, err := snapshot.Decode(b); !errors.Is(err, snapshot.ErrTooLarge) {
			t.Fatalf("Decode(%q) = %v; want ErrTooLarge", b, err)
		}
	}
	for _, b := range craftedHeaders[1:] {
		if s, err := snapshot.Decode(b); err == nil {
			t.Fatalf("Decode(%q) = %d events, no error", b, len(s.Events))
		}
	}
}

// MinEventBytes is a lower bound of what Encode writes per event: the
// smallest event there is (a cleared one, worker and event id 0) takes
// more.
func TestMinEventBytesIsALowerBound(t *testing.T) {
	one, err := snapshot.Encode(&snapshot.Snapshot{Events: []kvevents.Event{{Kind: kvevents.KindCleared}}})
	if err != nil {
		t.Fatal(err)
	}
	two, err := snapshot.Encode(&snapshot.Snapshot{Events: []kvevents.Event{{Kind: kvevents.KindCleared}, {Kind: kvevents.KindCleared}}})
	if err != nil {
		t.Fatal(err)
	}
	if per := len(two) - len(one); per < snapshot.MinEventBytes {
		t.Fatalf("a cleared event takes %d bytes, below MinEventBytes %d", per, snapshot.MinEventBytes)
	}
	if _, err := snapshot.Decode(two); err != nil {
		t.Fatal(err)
	}
}

// A crafted newest snapshot (a header whose event count no body holds) and
// one beyond MaxBytes are skipped, counted, and the older one restored.
func TestLatestSkipsCraftedAndOversized(t *testing.T) {
	ctx := context.Background()
	conn := eventplanetest.Embedded(t)
	m := snapshot.NewManager(conn, snapshot.Config{Bucket: "snaps", Keep: 10, MaxBytes: 64 << 10, Logger: eventplanetest.Quiet})
	g := eventplanetest.NewGen(3, 2, 2)
	save := func(seq uint64, n int) {
		t.Helper()
		s := &snapshot.Snapshot{Position: eventplane.Position{StreamSeq: seq}}
		for len(s.Events) < n {
			if ev := g.Next(); ev.Kind == kvevents.KindStored {
				ev.EventID = 0
				s.Events = append(s.Events, ev)
			}
		}
		if err := m.Save(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	save(10, 3)
	obs, err := conn.JS.ObjectStore(ctx, "snaps")
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range craftedHeaders {
		if _, err := obs.PutBytes(ctx, fmt.Sprintf("index-%020d", 20+i), b); err != nil {
			t.Fatal(err)
		}
	}
	save(30, 1000) // well beyond 64 KiB
	s, err := m.Latest(ctx)
	if err != nil || s == nil || s.Position.StreamSeq != 10 {
		t.Fatalf("Latest = %+v, %v; want snapshot 10", s, err)
	}
	if got, want := m.Stats().Skipped, uint64(len(craftedHeaders)+1); got != want {
		t.Fatalf("skipped %d snapshots, want %d", got, want)
	}
}

// FuzzDecode: no bytes make Decode panic or allocate beyond their size,
// and whatever decodes encodes and decodes again to the same position and
// events.
func FuzzDecode(f *testing.F) {
	for _, b := range craftedHeaders {
		f.Add(b)
	}
	g := eventplanetest.NewGen(2, 2, 2)
	s := &snapshot.Snapshot{Position: eventplane.Position{StreamSeq: 7, LastIDs: map[kvevents.Worker]uint64{{ID: 1}: 4}}, Stream: "x"}
	for len(s.Events) < 5 {
		if ev := g.Next(); ev.Kind == kvevents.KindStored {
			ev.EventID = 0
			s.Events = append(s.Events, ev)
		}
	}
	good, err := snapshot.Encode(s)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte("{}\n"))
	f.Add([]byte(`{"last_ids":[[1,2,3]],"events":0}` + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := snapshot.Decode(b)
		if err != nil {
			return
		}
		if len(s.Events)*snapshot.MinEventBytes > len(b) {
			t.Fatalf("%d events from %d bytes", len(s.Events), len(b))
		}
		again, err := snapshot.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := snapshot.Decode(again)
		if err != nil {
			t.Fatalf("re-encoded snapshot does not decode: %v", err)
		}
		if s2.Position.StreamSeq != s.Position.StreamSeq || len(s2.Events) != len(s.Events) ||
			eventplanetest.DumpHash(s2.Events) != eventplanetest.DumpHash(s.Events) {
			t.Fatal("round trip differs")
		}
	})
}
