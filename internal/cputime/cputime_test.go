package cputime

import (
	"runtime"
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
