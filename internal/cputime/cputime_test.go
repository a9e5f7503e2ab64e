package cputime

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// The thread clock must advance while the thread computes and must not
// run ahead of the wall clock (one thread cannot use more than one CPU).
func TestThreadAdvancesWithWork(t *testing.T) {
	if !Supported {
		if _, ok := Thread(); ok {
			t.Fatal("Thread reported a time on an unsupported platform")
		}
		t.Skip("no thread CPU clock on this platform")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0, ok := Thread()
	if !ok {
		t.Fatal("Thread failed")
	}
	w0 := time.Now()
	x := uint64(1)
	for {
		for range 1 << 16 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		c1, ok := Thread()
		if !ok {
			t.Fatal("Thread failed")
		}
		if c1 < c0 {
			t.Fatalf("thread clock went back: %v then %v", c0, c1)
		}
		if c1-c0 >= time.Millisecond {
			if w := time.Since(w0); c1-c0 > w+time.Millisecond {
				t.Fatalf("thread used %v CPU in %v wall", c1-c0, w)
			}
			break
		}
	}
	if x == 0 {
		t.Log(x) // keeps the loop
	}
}

func BenchmarkThread(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for b.Loop() {
		Thread()
	}
}

// Sched's CPU time covers at least the calling thread's, and neither
// figure goes back.
func TestSchedCoversThisThread(t *testing.T) {
	if !Supported {
		t.Skip("no schedstat on this platform")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r0, w0, ok := Sched()
	if !ok {
		t.Skip("schedstat not readable (kernel without CONFIG_SCHEDSTATS?)")
	}
	c, _ := Thread()
	r1, w1, ok := Sched()
	if !ok || r1 < r0 || w1 < w0 {
		t.Fatalf("went back or failed: %v %v -> %v %v (%v)", r0, w0, r1, w1, ok)
	}
	// schedstat lags the thread clock by at most the current slice.
	if r1+10*time.Millisecond < c {
		t.Fatalf("process on-CPU %v < this thread's CPU %v", r1, c)
	}
}

// Blocking in the kernel switches the thread off its CPU: the count must
// grow. (A nanosleep always blocks, however short; it synchronizes
// nothing.)
func TestThreadSwitchesCountsABlock(t *testing.T) {
	if !Supported {
		t.Skip("no thread counters on this platform")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n0, ok := ThreadSwitches()
	if !ok {
		t.Fatal("ThreadSwitches failed")
	}
	ts := syscall.Timespec{Nsec: 1000}
	if err := syscall.Nanosleep(&ts, nil); err != nil {
		t.Fatal(err)
	}
	if n1, _ := ThreadSwitches(); n1 <= n0 {
		t.Fatalf("switch count %d -> %d across a blocking call", n0, n1)
	}
}
