package affinity

import (
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

func TestTTL(t *testing.T) {
	t0 := time.Unix(0, 0)
	w1, w2 := kvevents.Worker{ID: 1}, kvevents.Worker{ID: 2, Rank: 1}
	tab := New(time.Minute)
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
	tab := New(0) // never expires
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
