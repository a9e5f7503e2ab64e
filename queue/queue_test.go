package queue

import (
	"errors"
	"slices"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func sec(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func TestFCFS(t *testing.T) {
	q := New[int](FCFS, 0)
	push := func(id string, prio, arrival float64) {
		t.Helper()
		if err := q.Push(Item[int]{ID: id, Priority: prio, Arrival: sec(arrival)}); err != nil {
			t.Fatal(err)
		}
	}
	push("a", 0, 0)
	push("b", 0, 1)
	push("c", 0, 1)     // same key as b: arrival order
	push("d", 1.5, 2)   // key -0.5: 1.5 s of priority jumps ahead of b, c (-1), not a (0)
	push("e", 1.5, 2.5) // key -1 ties with b, c; arrived later
	push("f", 10, 3)    // key 7: first
	want := []string{"f", "a", "d", "b", "c", "e"}
	if got := q.IDs(); !slices.Equal(got, want) {
		t.Fatalf("IDs = %v, want %v", got, want)
	}
	// IDs does not disturb the heap.
	var popped []string
	for q.Len() > 0 {
		it, _ := q.Pop()
		popped = append(popped, it.ID)
	}
	if !slices.Equal(popped, want) {
		t.Fatalf("pop order %v, want %v", popped, want)
	}
	if _, ok := q.Pop(); ok {
		t.Fatal("pop of empty queue")
	}
}

func TestWSPT(t *testing.T) {
	q := New[int](WSPT, 0)
	push := func(id string, prio float64, uncached int) {
		t.Helper()
		if err := q.Push(Item[int]{ID: id, Priority: prio, Arrival: t0, Uncached: uncached}); err != nil {
			t.Fatal(err)
		}
	}
	push("long", 0, 8000)      // 1/8000
	push("short", 0, 100)      // 1/100
	push("cached", 0, 0)       // 1/max(1,0) = 1
	push("prio-long", 3, 8000) // 4/8000 = 1/2000
	push("short2", 0, 100)     // ties short: arrival order
	want := []string{"cached", "short", "short2", "prio-long", "long"}
	if got := q.IDs(); !slices.Equal(got, want) {
		t.Fatalf("IDs = %v, want %v", got, want)
	}
	if k := Key(WSPT, 3, t0, t0, 8000); k != 4.0/8000 {
		t.Errorf("Key = %v", k)
	}
	if it, ok := q.Peek(); !ok || it.ID != "cached" || it.Key() != 1 {
		t.Errorf("Peek = %+v", it)
	}
}

func TestBoundedRemove(t *testing.T) {
	q := New[string](FCFS, 2)
	if err := q.Push(Item[string]{ID: "a", Arrival: sec(0), Value: "A"}); err != nil {
		t.Fatal(err)
	}
	if err := q.Push(Item[string]{ID: "a", Arrival: sec(0)}); err == nil {
		t.Error("duplicate id accepted")
	}
	if err := q.Push(Item[string]{ID: "b", Arrival: sec(1)}); err != nil {
		t.Fatal(err)
	}
	if err := q.Push(Item[string]{ID: "c", Arrival: sec(2)}); !errors.Is(err, ErrFull) {
		t.Fatalf("overflow: %v", err)
	}
	if it, ok := q.Remove("a"); !ok || it.Value != "A" {
		t.Fatalf("Remove a = %+v %v", it, ok)
	}
	if _, ok := q.Remove("a"); ok {
		t.Fatal("removed twice")
	}
	if q.Contains("a") || !q.Contains("b") {
		t.Fatal("Contains")
	}
	if err := q.Push(Item[string]{ID: "c", Arrival: sec(2)}); err != nil {
		t.Fatalf("after remove: %v", err)
	}
	if got := q.IDs(); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("IDs = %v", got)
	}
	if _, err := ParsePolicy("lifo"); err == nil {
		t.Error("ParsePolicy accepted lifo")
	}
	if p, _ := ParsePolicy("wspt"); p != WSPT || p.String() != "wspt" {
		t.Error("ParsePolicy wspt")
	}
}
