//go:build linux

package indexer

import (
	"syscall"
	"unsafe"
)

// adviseHuge asks the kernel (madvise MADV_HUGEPAGE) to back the whole
// 2 MiB pages inside the n bytes at p with transparent huge pages. It is
// only a hint: with THP off or unsupported nothing changes, and errors
// are ignored. Go's heap does not ask for huge pages by itself and this
// machine's THP mode is "madvise", so without it a large table sits on
// 4 KiB pages and each random probe misses the TLB as well as the
// caches. Used for Flash's id table; measured: see (*Flash).rehash.
// Slabs of huge pages for the entry chunks and worker tables measured
// no faster (docs/experiments/indexer-entry-layout.md).
func adviseHuge(p unsafe.Pointer, n uintptr) {
	off, size := hugeRange(uintptr(p), n)
	if size == 0 {
		return
	}
	_ = syscall.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, off)), size), syscall.MADV_HUGEPAGE)
}
