package kvhash

import (
	"encoding/binary"
	"unsafe"
)

// littleEndian reports whether this machine stores a uint32 as its
// little-endian bytes, so a token slice's memory already is the byte string
// DESIGN.md §1 hashes and needs no copy. A variable, not a build tag, so the
// tests can run the portable copying path on any machine.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// tokenBytes views tokens' memory as bytes (no copy); only meaningful when
// littleEndian. The view is read-only and lives no longer than tokens.
func tokenBytes(tokens []uint32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(tokens))), len(tokens)*4)
}

// putTokens writes tokens into buf as little-endian uint32s.
func putTokens(buf []byte, tokens []uint32) {
	for i, t := range tokens {
		binary.LittleEndian.PutUint32(buf[i*4:], t)
	}
}
