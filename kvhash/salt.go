package kvhash

import (
	"encoding/binary"

	"github.com/zeebo/xxh3"
)

// SaltSeed is the XXH3 seed of the cache-salt fold (Seed uses 0 and 1).
const SaltSeed uint64 = 2

// SaltFirst folds a per-request cache salt (vLLM's cache_salt) into the
// local hash of a prompt's FIRST block: XXH3(LE64(local) || salt, seed 2).
// An empty salt means absent and returns local unchanged.
//
// vLLM adds cache_salt to the extra keys of the block that starts at token
// 0 only (generate_block_hash_extra_keys); every later block differs
// through its parent hash. kvrouter's local hashes are position-independent
// and its indexes chain them (prefix ids, sequence hashes), so salting
// block 0 alone likewise separates every block of two prompts whose salts
// differ, and prompts with one salt share as before. DESIGN.md §1.
func SaltFirst(local uint64, salt string) uint64 {
	if salt == "" {
		return local
	}
	var stack [64]byte
	buf := stack[:0]
	if 8+len(salt) > len(stack) {
		buf = make([]byte, 0, 8+len(salt))
	}
	buf = binary.LittleEndian.AppendUint64(buf, local)
	buf = append(buf, salt...)
	return xxh3.HashSeed(buf, SaltSeed)
}

// SaltLocals applies SaltFirst to locals[0] (when there is one) in place
// and returns locals. Chains derived from locals (AppendSeq,
// AppendPrefixIDs) must be computed after it.
func SaltLocals(locals []uint64, salt string) []uint64 {
	if salt != "" && len(locals) > 0 {
		locals[0] = SaltFirst(locals[0], salt)
	}
	return locals
}
