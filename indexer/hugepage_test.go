package indexer

import (
	"testing"
	"unsafe"
)

func TestHugeRange(t *testing.T) {
	const h = hugeSize
	for _, c := range []struct{ p, n, off, size uintptr }{
		{0, h - 1, 0, 0},
		{0, h, 0, h},
		{0, 3*h + 5, 0, 3 * h},
		{1, h, 0, 0},
		{1, 2 * h, h - 1, h},
		{1, 2*h - 2, 0, 0},
		{1, 2*h - 1, h - 1, h},
		{h - 8, 3 * h, 8, 2 * h},
		{5 * h, 2*h + 7, 0, 2 * h},
	} {
		off, size := hugeRange(c.p, c.n)
		if size == 0 {
			off = 0
		}
		if off != c.off || size != c.size {
			t.Errorf("hugeRange(%#x, %#x) = %#x, %#x; want %#x, %#x", c.p, c.n, off, size, c.off, c.size)
		}
	}
	// Any result lies inside the range, is aligned, and leaves less than
	// a huge page unused at the end.
	for p := uintptr(0); p < 3*h; p += h / 3 {
		for n := uintptr(0); n < 5*h; n += h / 7 {
			off, size := hugeRange(p, n)
			if size == 0 {
				continue
			}
			if (p+off)%h != 0 || size%h != 0 || off+size > n || n-off-size >= h || off >= h {
				t.Fatalf("hugeRange(%#x, %#x) = %#x, %#x", p, n, off, size)
			}
		}
	}
}

// TestAdviseHugeKeepsData: the hint must not disturb a table's contents.
func TestAdviseHugeKeepsData(t *testing.T) {
	s := make([]uint64, 3*hugeSize/8)
	for i := range s {
		s[i] = uint64(i) * pidK1
	}
	adviseHuge(unsafe.Pointer(&s[0]), uintptr(len(s))*8)
	for i := range s {
		if s[i] != uint64(i)*pidK1 {
			t.Fatalf("slot %d changed", i)
		}
	}
}
