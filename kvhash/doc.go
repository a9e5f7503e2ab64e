// Package kvhash cuts token sequences into fixed-size blocks and names them.
//
// Every full block gets a position-independent local hash (XXH3-64 over the
// block's tokens as little-endian uint32, seed 1337, optionally salted by a
// LoRA name and a cache namespace, optionally followed by multimodal hashes),
// and a rolling sequence hash that names the exact prefix ending at that
// block. A trailing partial block is never hashed. See DESIGN.md §1. A
// per-request cache salt (vLLM's cache_salt) is folded into the first
// block's local hash only (SaltFirst), as vLLM salts the block at token 0.
//
// The functions are pure and safe for concurrent use.
package kvhash
