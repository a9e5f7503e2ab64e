package affinity

import (
	"fmt"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

func TestTTL(t *testing.T) {
	t0 := time.Unix(0, 0)
	w1, w2 := kvevents.Worker{ID: 1}, kvevents.Worker{ID: 2, Rank: 1}
	tab := New(Config{TTL: time.Minute})
	tab.Bind("s1", w1, t0)
	tab.Bind("s2", w2, t0.Add(30*time.Second))
	if w, ok := tab.Get("s1", t0.Add(time.Minute)); !ok || w != w1 {
		t.Fatalf("at TTL the binding still holds: %v %v", w, ok)
	}
	// Use refreshes: rebinding at 50 s moves the deadline to 110 s.
	tab.Bind("s1", w1, t0.Add(50*time.Second))
	if _, ok := tab.Get("s1", t0.Add(100*time.Second)); !ok {
		t.Fatal("refreshed binding expired")
	}
	if _, ok := tab.Get("s1", t0.Add(111*time.Second)); ok {
		t.Fatal("idle binding survived its TTL")
	}
	if tab.Len() != 1 {
		t.Fatalf("expired binding not deleted by Get: len %d", tab.Len())
	}
	// Sweep removes s2 (idle since 30 s).
	if n := tab.Sweep(t0.Add(91 * time.Second)); n != 1 || tab.Len() != 0 {
		t.Fatalf("sweep removed %d, left %d", n, tab.Len())
	}
	// Get does not refresh.
	tab.Bind("s3", w1, t0)
	tab.Get("s3", t0.Add(59*time.Second))
	if _, ok := tab.Get("s3", t0.Add(61*time.Second)); ok {
		t.Fatal("Get refreshed the binding")
	}
}

func TestDrop(t *testing.T) {
	t0 := time.Unix(0, 0)
	tab := New(Config{}) // never expires
	tab.Bind("a", kvevents.Worker{ID: 1}, t0)
	tab.Bind("b", kvevents.Worker{ID: 1, Rank: 3}, t0)
	tab.Bind("c", kvevents.Worker{ID: 2}, t0)
	if _, ok := tab.Get("c", t0.Add(1000*time.Hour)); !ok {
		t.Fatal("TTL 0 expired")
	}
	if n := tab.DropWorker(1); n != 2 {
		t.Fatalf("DropWorker removed %d, want both ranks' 2", n)
	}
	tab.Drop("c")
	if tab.Len() != 0 {
		t.Fatalf("left %d", tab.Len())
	}
	if tab.String() != "sessions: none\n" {
		t.Fatal(tab.String())
	}
}

// check verifies the list and the byte count agree with the map.
func check(t *testing.T, tab *Table) {
	t.Helper()
	n, b := 0, int64(0)
	var prev *entry
	for e := tab.head; e != nil; e = e.next {
		if e.prev != prev || tab.m[e.session] != e {
			t.Fatalf("list broken at %q", e.session)
		}
		prev = e
		n++
		b += Size(e.session)
	}
	if n != len(tab.m) || b != tab.Bytes() || tab.tail != prev {
		t.Fatalf("list %d entries %d bytes, map %d, counted %d bytes", n, b, len(tab.m), tab.Bytes())
	}
}

// A table at its bounds evicts the least recently bound sessions: by
// count, then by bytes; a session larger than the byte bound on its own
// is not bound at all.
func TestBounds(t *testing.T) {
	t0 := time.Unix(0, 0)
	w := kvevents.Worker{ID: 1}
	tab := New(Config{TTL: time.Minute, MaxSessions: 3, MaxBytes: 4 * (EntryOverhead + 10)})
	for _, s := range []string{"a", "b", "c"} {
		tab.Bind(s, w, t0)
	}
	tab.Bind("a", w, t0) // a is the most recently bound now: b goes first
	tab.Bind("d", w, t0)
	check(t, tab)
	if _, ok := tab.Get("b", t0); ok || tab.Len() != 3 || tab.Evicted() != 1 {
		t.Fatalf("count bound: b kept or len %d, evicted %d\n%s", tab.Len(), tab.Evicted(), tab)
	}
	// 4*(112+10) = 488 bytes: "a","c","d" take 3*113 = 339; a 30-byte id
	// (142) does not fit beside them, so c (the oldest) goes.
	long := "0123456789012345678901234567890"[:30]
	tab.Bind(long, w, t0)
	check(t, tab)
	if _, ok := tab.Get("c", t0); ok || tab.Evicted() != 2 || tab.Bytes() > 488 {
		t.Fatalf("byte bound: c kept, evicted %d, %d bytes\n%s", tab.Evicted(), tab.Bytes(), tab)
	}
	if tab.Bind(string(make([]byte, 400)), w, t0) {
		t.Fatal("a binding larger than the byte bound was bound")
	}
	check(t, tab)
	tab.Drop("a")
	tab.DropWorker(1)
	check(t, tab)
	if tab.Len() != 0 || tab.Bytes() != 0 {
		t.Fatalf("left %d, %d bytes", tab.Len(), tab.Bytes())
	}
	// A flood of distinct ids holds at most MaxSessions.
	for i := range 1000 {
		tab.Bind(fmt.Sprint(i), w, t0)
	}
	check(t, tab)
	if tab.Len() != 3 {
		t.Fatalf("flood: %d sessions", tab.Len())
	}
}
