package kvhash

import (
	"encoding/binary"
	"math/bits"

	"github.com/zeebo/xxh3"
)

// XXH3-64 of an input longer than 240 bytes (a block of more than 60
// tokens) reads a 192-byte secret derived from the seed (DESIGN.md §1).
// xxh3.HashSeed derives it again for every call, which cost more than
// hashing a 64-token block itself; AppendLocal hashes every block of a
// prompt under one seed, so it derives the secret once per call
// (longKeys) and hashes each block with hashLong, written from the public
// XXH3 specification, whose stripes run in AVX2 (long_amd64.s). Inputs of
// at most 240 bytes take no secret and still go to xxh3.HashSeed, as do
// all inputs on machines without AVX2. TestHashLongMatchesXXH3 holds
// hashLong equal to xxh3.HashSeed over random inputs of every length up
// to 4 KiB.

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
	// longMin is the shortest input of the long path.
	longMin = 241

	prime32_1 uint64 = 0x9E3779B1
	prime32_2 uint64 = 0x85EBCA77
	prime32_3 uint64 = 0xC2B2AE3D
	prime64_1 uint64 = 0x9E3779B185EBCA87
	prime64_2 uint64 = 0xC2B2AE3D27D4EB4F
	prime64_3 uint64 = 0x165667B19E3779F9
	prime64_4 uint64 = 0x85EBCA77C2B2AE63
	prime64_5 uint64 = 0x27D4EB2F165667C5
)

// longKeys is the secret of one seed, laid out as the long path reads it.
type longKeys struct {
	seed uint64
	// w are the secret's words: stripe n of a block reads w[n:n+8], the
	// scramble w[16:24].
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
	if len(b) < longMin || !useAVX2 {
		return xxh3.HashSeed(b, k.seed)
	}
	return hashLong(b, k)
}

// hashLong is XXH3-64 of b (longer than 240 bytes) under k.
func hashLong(b []byte, k *longKeys) uint64 {
	acc := [8]uint64{prime32_3, prime64_1, prime64_2, prime64_3, prime64_4, prime32_2, prime64_5, prime32_1}
	n := len(b)
	p := b
	for range (n - 1) / blockLen {
		accumAVX2(&acc, &p[0], stripesPerBlock, &k.w[0], nil, nil)
		// The scramble closes each full block.
		for i := range acc {
			a := acc[i]
			acc[i] = (a ^ a>>47 ^ k.w[stripesPerBlock+i]) * prime32_1
		}
		p = p[blockLen:]
	}
	// The stripes of the last block that end before the input's last
	// byte, then the last stripe, which ends at the input's end
	// (overlapping them).
	accumAVX2(&acc, &p[0], (len(p)-1)/stripeLen, &k.w[0], &b[n-stripeLen], &k.last[0])
	m := &k.merge
	h := uint64(n)*prime64_1 + mulFold(acc[0]^m[0], acc[1]^m[1]) + mulFold(acc[2]^m[2], acc[3]^m[3]) +
		mulFold(acc[4]^m[4], acc[5]^m[5]) + mulFold(acc[6]^m[6], acc[7]^m[7])
	return avalanche(h)
}

func mulFold(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// avalanche is XXH3's final mix (seqNext inlines the same).
func avalanche(h uint64) uint64 {
	h ^= h >> 37
	h *= primeMX1
	return h ^ h>>32
}
