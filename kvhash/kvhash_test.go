package kvhash

import (
	"testing"

	"github.com/zeebo/xxh3"
)

func seq(from, to uint32) []uint32 {
	var out []uint32
	for t := from; t < to; t++ {
		out = append(out, t)
	}
	return out
}

// TestGoldenVectors checks every vector of DESIGN.md §1.
func TestGoldenVectors(t *testing.T) {
	check := func(name string, got, want uint64) {
		t.Helper()
		if got != want {
			t.Errorf("%s: got %d, want %d", name, got, want)
		}
	}
	check("local [1,2,3,4]", Local([]uint32{1, 2, 3, 4}, DefaultSeed), 14643705804678351452)
	check(`XXH3("test data", 1337)`, xxh3.HashStringSeed("test data", 1337), 13226331709069118873)

	locals := LocalHashes(seq(0, 12), 4, DefaultSeed)
	wantLocals := []uint64{9143094415614847814, 12124091508212882195, 1088361764653601668}
	if len(locals) != 3 {
		t.Fatalf("got %d locals, want 3", len(locals))
	}
	for i := range wantLocals {
		check("local block", locals[i], wantLocals[i])
	}
	wantSeq := []uint64{9143094415614847814, 9510318385840434533, 16998148715716822651}
	for i, s := range SeqHashes(locals) {
		check("seq chain", s, wantSeq[i])
	}
	check("seq_next(11, 22)", SeqNext(11, 22), 750553365844651409)
	check("salt lora", Seed("adapter-a", ""), 8842669519798868182)
	check("local lora", Local(seq(0, 4), Seed("adapter-a", "")), 6665157333201000639)
	check("salt namespace", Seed("", "tenant-a"), 1948188790972764086)
	check("salt both", Seed("adapter-a", "tenant-a"), 10790858310771630931)
	check("mm {99,42}", LocalMM(seq(0, 4), []uint64{99, 42}, DefaultSeed), 10529751237606628379)
	check("tokens 0..63 B=64", LocalHashes(seq(0, 64), 64, DefaultSeed)[0], 3480597578098033343)
}

func TestPartialBlockIgnored(t *testing.T) {
	if got := LocalHashes(seq(0, 7), 4, DefaultSeed); len(got) != 1 {
		t.Fatalf("7 tokens at B=4: got %d blocks, want 1", len(got))
	}
	if got := LocalHashes(seq(0, 3), 4, DefaultSeed); len(got) != 0 {
		t.Fatalf("3 tokens at B=4: got %d blocks, want 0", len(got))
	}
}

func TestLargeBlocksMatchSmallPath(t *testing.T) {
	toks := seq(0, 1024)
	got := LocalHashes(toks, 512, DefaultSeed)
	for i := range got {
		if want := Local(toks[i*512:(i+1)*512], DefaultSeed); got[i] != want {
			t.Fatalf("block %d: %d != %d", i, got[i], want)
		}
	}
}

func TestMMUnsortedEqualsSorted(t *testing.T) {
	a := LocalMM(seq(0, 4), []uint64{99, 42}, DefaultSeed)
	b := LocalMM(seq(0, 4), []uint64{42, 99}, DefaultSeed)
	if a != b {
		t.Fatal("mm hash order must not matter")
	}
	if LocalMM(seq(0, 4), nil, DefaultSeed) != Local(seq(0, 4), DefaultSeed) {
		t.Fatal("no mm hashes must equal plain local hash")
	}
}
