package kvevents

import (
	"testing"

	"github.com/kvrouter/kvrouter/kvhash"
)

// TestVLLMCacheSalt decodes testdata/vllm_salt.hex (vLLM's layout: the
// salt is an extra key of the block at token 0) and checks every local
// hash against the router's own computation, so an event names exactly
// the blocks a request with the same salt asks for, and no other's.
func TestVLLMCacheSalt(t *testing.T) {
	d, err := NewVLLMDecoder(VLLMConfig{BlockSize: 4, WorkerID: 9})
	if err != nil {
		t.Fatal(err)
	}
	evs, _, err := d.DecodeBatch(nil, readHex(t, "testdata/vllm_salt.hex"))
	if err != nil || len(evs) != 6 {
		t.Fatal(evs, err)
	}
	tok := func(from, to uint32) []uint32 {
		var out []uint32
		for i := from; i < to; i++ {
			out = append(out, i)
		}
		return out
	}
	want := func(salt string) []uint64 {
		return kvhash.SaltLocals(kvhash.LocalHashes(tok(0, 8), 4, kvhash.DefaultSeed), salt)
	}
	locals := func(ev Event) []uint64 {
		var out []uint64
		for _, b := range ev.Blocks {
			out = append(out, b.Local)
		}
		return out
	}
	for i, salt := range []string{"tenant-a", "tenant-b"} {
		got, w := locals(evs[i]), want(salt)
		if got[0] != w[0] || got[1] != w[1] {
			t.Errorf("%s: locals %v, want %v", salt, got, w)
		}
	}
	if evs[0].Blocks[0].Local == evs[1].Blocks[0].Local || evs[0].Blocks[0].Local == want("")[0] {
		t.Error("tenants' first blocks must differ from each other and from the unsalted one")
	}
	if got := evs[2].Blocks[0].Local; got != kvhash.Local(tok(8, 12), kvhash.DefaultSeed) {
		t.Errorf("continuation (parent set) must not be salted: %d", got)
	}
	lora := kvhash.Seed("adapter-a", "")
	mm := kvhash.LocalMM(tok(0, 4), []uint64{0xabababababababab}, lora)
	if got := evs[3].Blocks[0].Local; got != kvhash.SaltFirst(mm, "tenant-a") {
		t.Errorf("lora + mm + salt: %d", got)
	}
	if got := evs[4].Blocks[0].Local; got != kvhash.SaltFirst(kvhash.Local(tok(0, 4), lora), "tenant-a") {
		t.Errorf("array form, lora + salt: %d", got)
	}
	if got := evs[5].Blocks[0].Local; got != want("")[0] {
		t.Errorf("no salt: %d", got)
	}
}
