package kvhash

import (
	"encoding/binary"
	"testing"

	"github.com/zeebo/xxh3"
)

// TestSaltGoldenVectors pins the cache-salt fold: block 0's local hash
// (DESIGN.md §1's tokens 0..3, B=4) salted as XXH3(LE64(local) || salt,
// seed 2), built here byte by byte, and the values themselves.
func TestSaltGoldenVectors(t *testing.T) {
	const local0 = 9143094415614847814 // tokens 0..3, no salt (golden)
	layout := func(local uint64, salt string) uint64 {
		b := binary.LittleEndian.AppendUint64(nil, local)
		return xxh3.HashSeed(append(b, salt...), 2)
	}
	for _, c := range []struct {
		local uint64
		salt  string
		want  uint64
	}{
		{local0, "tenant-a", 15002246896175444077},
		{local0, "tenant-b", 17738219584742559397},
		{6665157333201000639, "tenant-a", 4143563014013868862}, // lora "adapter-a" block
	} {
		if got := SaltFirst(c.local, c.salt); got != c.want || got != layout(c.local, c.salt) {
			t.Errorf("SaltFirst(%d, %q) = %d, want %d (layout %d)", c.local, c.salt, got, c.want, layout(c.local, c.salt))
		}
	}
	if SaltFirst(local0, "") != local0 {
		t.Fatal("an empty salt must be absent")
	}
	long := string(make([]byte, 100)) // past the stack buffer
	if SaltFirst(local0, long) != layout(local0, long) {
		t.Fatal("long salt")
	}
	// Only block 0 is salted; its chain then differs at every block.
	locals := SaltLocals(LocalHashes(seq(0, 8), 4, DefaultSeed), "tenant-a")
	if locals[0] != 15002246896175444077 || locals[1] != 12124091508212882195 {
		t.Fatalf("salted locals %v", locals)
	}
	if s := SeqHashes(locals); s[1] != 16506247489760720605 || s[1] == 9510318385840434533 {
		t.Fatalf("salted chain %v", s)
	}
	if got := SaltLocals(nil, "tenant-a"); len(got) != 0 {
		t.Fatal("no blocks: nothing to salt")
	}
}
