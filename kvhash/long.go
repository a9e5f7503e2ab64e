package kvhash

import (
	"encoding/binary"

	"github.com/zeebo/xxh3"
)

// XXH3-64 of an input longer than 240 bytes (a block of more than 60
// tokens) reads a 192-byte secret derived from the seed (DESIGN.md §1).
// xxh3.HashSeed derives it again for every call, which cost more than
// hashing a 64-token block itself. AppendLocal hashes every block of a
// prompt under one seed, so it derives the secret once per call
// (longKeys), and hashes blocks of 241 to 1024 bytes (61 to 256 tokens,
// one secret block: no scramble) in one AVX2 loop (hashBlocksAVX2 in
// long_amd64.s), written from the public XXH3 specification; blocks of 61
// to 64 tokens go to its AVX-512 form where the CPU has it
// (hashBlocks256AVX512 in long512_amd64.s). Shorter
// inputs take no secret, and longer ones spend little on it, so they
// still go to xxh3.HashSeed, as do all inputs on machines without AVX2.
// TestHashLongMatchesXXH3 holds the loop equal to xxh3.HashSeed at every
// length it takes, under several seeds.

// specSecret is the XXH3 specification's default secret (kSecret), as
// little-endian words.
var specSecret = [secretWords]uint64{
	0xbe4ba423396cfeb8, 0x1cad21f72c81017c, 0xdb979083e96dd4de, 0x1f67b3b7a4a44072,
	0x78e5c0cc4ee679cb, 0x2172ffcc7dd05a82, 0x8e2443f7744608b8, 0x4c263a81e69035e0,
	0xcb00c391bb52283c, 0xa32e531b8b65d088, 0x4ef90da297486471, 0xd8acdea946ef1938,
	0x3f349ce33f76faa8, 0x1d4f0bc7c7bbdcf9, 0x3159b4cd4be0518a, 0x647378d9c97e9fc8,
	0xc3ebd33483acc5ea, 0xeb6313faffa081c5, 0x49daf0b751dd0d17, 0x9e68d429265516d3,
	0xfca1477d58be162b, 0xce31d07ad1b8f88f, 0x280416958f3acb45, 0x7e404bbbcafbd7af,
}

const (
	secretWords = 24 // 192 bytes
	stripeLen   = 64
	// stripesPerBlock is how many stripes one secret covers (it advances
	// 8 bytes per stripe): (192 - 64) / 8.
	stripesPerBlock = 16
	blockLen        = stripesPerBlock * stripeLen
	// lastStripeKey and mergeKey are the byte offsets of the secret that
	// the last stripe and the final merge read.
	lastStripeKey = 192 - stripeLen - 7
	mergeKey      = 11
	// longMin is the shortest input that reads the secret.
	longMin = 241
)

// longKeys is the secret of one seed, laid out as the long path reads it.
type longKeys struct {
	seed uint64
	// w are the secret's words: stripe n of a block reads w[n:n+8].
	w [secretWords]uint64
	// last is the key of an input's last stripe (secret bytes 121..184),
	// merge that of the final merge (bytes 11..74): not word-aligned.
	last, merge [8]uint64
}

// newLongKeys derives the secret of seed: the specification adds the seed
// to the even words of the default secret and subtracts it from the odd.
func newLongKeys(seed uint64) longKeys {
	k := longKeys{seed: seed}
	var raw [secretWords * 8]byte
	for i, v := range specSecret {
		if i%2 == 0 {
			v += seed
		} else {
			v -= seed
		}
		k.w[i] = v
		binary.LittleEndian.PutUint64(raw[i*8:], v)
	}
	for i := range 8 {
		k.last[i] = binary.LittleEndian.Uint64(raw[lastStripeKey+8*i:])
		k.merge[i] = binary.LittleEndian.Uint64(raw[mergeKey+8*i:])
	}
	return k
}

// hash is xxh3.HashSeed(b, k.seed).
func (k *longKeys) hash(b []byte) uint64 {
	if !useAVX2 || len(b) < longMin || len(b) > blockLen {
		// Past one secret block (256 tokens) the derivation is a small
		// part of the work, and xxh3 has an AVX-512 loop.
		return xxh3.HashSeed(b, k.seed)
	}
	var h uint64
	hashBlocks(&h, &b[0], 1, len(b), &k.w[0], &k.last[0], &k.merge[0], nil, nil, 0, 0)
	return h
}
