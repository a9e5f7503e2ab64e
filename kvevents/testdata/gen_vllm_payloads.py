#!/usr/bin/python3
"""Generates the vLLM/SGLang-format ZMQ payloads under kvevents/testdata.

Run with Debian's python3-msgpack (apt-get install python3-msgpack):

    /usr/bin/python3 kvevents/testdata/gen_vllm_payloads.py

python3-msgpack writes the same wire format as vLLM's msgspec encoder
(float64 ts, compact ints, uint64 for ints >= 2**63, bin for bytes), so these
are real payloads as far as the decoder can tell. Each payload is written as
hex text (<name>.hex); the Go tests read the committed files and do not need
Python. The expected decoder output lives beside them as <name>.golden.
"""
import os

import msgpack

HERE = os.path.dirname(os.path.abspath(__file__))
SHA = bytes(range(32))  # a 32-byte sha256-style block hash: 00 01 .. 1f
TS = 1732000000.125


def write(name, obj):
    data = msgpack.packb(obj, use_bin_type=True)
    with open(os.path.join(HERE, name + ".hex"), "w") as f:
        f.write(data.hex() + "\n")


# Array form (array_like=True), every historical field-count prefix,
# block size 4. Tokens 0..3 / 4..7 / 8..11 are DESIGN.md §1's golden blocks.
write("vllm_array", [
    TS,
    [
        # SGLang / early vLLM: 6 fields (lora_id last), uint64 >= 2**63 hash.
        ["BlockStored", [0xF3A1B2C3D4E5F607, -2], None, [0, 1, 2, 3, 4, 5, 6, 7], 4, None],
        # + medium: CPU* -> host_pinned; parent as negative int64.
        ["BlockStored", [42], -2, [8, 9, 10, 11], 4, None, "cpu_pinned"],
        # + lora_name (salts the seed) and extra_keys=None; bytes parent.
        ["BlockStored", [43], SHA, [0, 1, 2, 3], 4, 7, "GPU", "adapter-a", None],
        # Removed: bytes hash, 2-field and 3-field forms.
        ["BlockRemoved", [SHA, 42], "DISK"],
        ["BlockRemoved", [0xF3A1B2C3D4E5F607]],
        # Unknown tag and unknown trailing fields are skipped.
        ["SomethingNew", 1, [2, 3]],
        ["AllBlocksCleared", "trailing", 99],
    ],
    2,
])

# Map form (current vLLM: no array_like, tag under "type", defaults omitted),
# with a hybrid model's groups: group 0 full attention, group 1 sliding window.
write("vllm_map", {
    "ts": TS,
    "events": [
        {"type": "BlockStored", "block_hashes": [100, 101], "parent_block_hash": None,
         "token_ids": [0, 1, 2, 3, 4, 5, 6, 7], "block_size": 4, "lora_id": None,
         "medium": "GPU", "lora_name": None, "group_idx": 0,
         "kv_cache_spec_kind": "full_attention", "future_key": {"x": [1, 2]}},
        {"type": "BlockStored", "block_hashes": [200], "parent_block_hash": None,
         "token_ids": [0, 1, 2, 3], "block_size": 4, "lora_id": None,
         "medium": "GPU", "lora_name": None, "group_idx": 1,
         "kv_cache_spec_kind": "sliding_window", "kv_cache_spec_sliding_window": 128},
        {"type": "BlockRemoved", "block_hashes": [200], "medium": "GPU", "group_idx": 1},
        {"type": "BlockRemoved", "block_hashes": [101], "medium": "GPU", "group_idx": 0},
        {"type": "AllBlocksCleared"},
    ],
    "data_parallel_rank": 1,
})

# Hybrid model (vLLM's hybrid KV cache manager), one payload per form. Every
# group names a block by the same engine hash; the fields after extra_keys
# are group_idx, kv_cache_spec_kind, kv_cache_spec_sliding_window (then
# newer fields, skipped). Group 0 full attention, group 1 sliding window of
# 8 tokens, group 2 Mamba state (a checkpoint at block 301 only), group 3
# sliding_window_mla, group 4 chunked-local attention (not modelled:
# dropped, and so are its removes), group 5 never described. Removes carry
# only group_idx.
TOK8 = [0, 1, 2, 3, 4, 5, 6, 7]


def hybrid_events(ev):
    return [
        ev("BlockStored", [300, 301], None, TOK8, 0, "full_attention"),
        ev("BlockStored", [300, 301], None, TOK8, 1, "sliding_window", 8),
        ev("BlockStored", [301], 300, [4, 5, 6, 7], 2, "mamba"),
        ev("BlockStored", [300], None, [0, 1, 2, 3], 3, "sliding_window_mla", 16, True),
        ev("BlockStored", [300], None, [0, 1, 2, 3], 4, "chunked_local_attention", 4),
        ev("BlockRemoved", [300], 1),
        ev("BlockRemoved", [301], 2),
        ev("BlockRemoved", [300], 3),
        ev("BlockRemoved", [300], 4),
        ev("BlockRemoved", [999], 5),
        ev("BlockRemoved", [301], 0),
        ["AllBlocksCleared"] if ev is hybrid_array else {"type": "AllBlocksCleared"},
    ]


def hybrid_array(tag, hashes, *rest):
    if tag == "BlockRemoved":
        return [tag, hashes, "GPU", rest[0]]
    parent, tokens, group, kind = rest[:4]
    e = [tag, hashes, parent, tokens, 4, None, "GPU", None, None, group, kind]
    if len(rest) > 4:
        e.append(rest[4])
    if len(rest) > 5:
        e += ["locality", None]  # newer fields past the known ones
    return e


def hybrid_map(tag, hashes, *rest):
    if tag == "BlockRemoved":
        return {"type": tag, "block_hashes": hashes, "medium": "GPU", "group_idx": rest[0]}
    parent, tokens, group, kind = rest[:4]
    e = {"type": tag, "block_hashes": hashes, "parent_block_hash": parent,
         "token_ids": tokens, "block_size": 4, "lora_id": None, "medium": "GPU",
         "lora_name": None, "group_idx": group, "kv_cache_spec_kind": kind}
    if len(rest) > 4:
        e["kv_cache_spec_sliding_window"] = rest[4]
    if len(rest) > 5:
        e["locality"] = "GPU0"
    return e


write("vllm_hybrid_array", [TS, hybrid_events(hybrid_array), 0])
write("vllm_hybrid_map", {"ts": TS, "events": hybrid_events(hybrid_map)})

# EAGLE (SGLang bigram keys): token pairs [t_i, t_i+1], one per position.
write("vllm_eagle", [
    TS,
    [["BlockStored", [7, 8], None,
      [[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 6], [6, 7], [7, 8]], 4, None, None]],
])

# Bad events inside a good batch: the good ones still decode.
write("vllm_partial", [
    TS,
    [
        ["BlockStored", [1], None, [0, 1, 2, 3, 4, 5, 6, 7], 8, None, "GPU"],   # block size 8 != 4
        ["BlockStored", [2], None, [0, 1, 2], 4, None, "GPU"],                  # 3 tokens for 1 block
        ["BlockStored", [3], None, [4, 5, 6, 7], 4, None, "GPU"],               # fine
    ],
])

# DEPS.md §3 example payloads (block size 16; their token lists do not cover
# their blocks, so the stores fail with TokenCountError).
write("deps_full", [
    1732000000.125,
    [["BlockStored", [0xF3A1B2C3D4E5F607, 1234567890123], None, [101, 102, 103, 104], 16, None, "GPU"],
     ["BlockRemoved", [SHA], "GPU"],
     ["AllBlocksCleared"]],
    3,
])
write("deps_short", [
    1732000001.5,
    [["BlockStored", [SHA], 0xF3A1B2C3D4E5F607, [7, 8], 16, 5, None]],
])

# cache_salt (current vLLM, map form): the salt is an extra key of the
# block at token 0 only (generate_block_hash_extra_keys: LoRA name, mm
# keys as [identifier, offset], then the salt), so it appears in
# extra_keys[0] of a store without a parent. Two tenants store the same
# tokens; a continuation (parent set) carries no salt; an array-form event
# (older field order) carries LoRA name + salt.
MMID = "ab" * 32
write("vllm_salt", {
    "ts": TS,
    "events": [
        {"type": "BlockStored", "block_hashes": [500, 501], "parent_block_hash": None,
         "token_ids": [0, 1, 2, 3, 4, 5, 6, 7], "block_size": 4, "lora_id": None,
         "medium": "GPU", "lora_name": None, "extra_keys": [["tenant-a"], None]},
        {"type": "BlockStored", "block_hashes": [600, 601], "parent_block_hash": None,
         "token_ids": [0, 1, 2, 3, 4, 5, 6, 7], "block_size": 4, "lora_id": None,
         "medium": "GPU", "lora_name": None, "extra_keys": [["tenant-b"], None]},
        {"type": "BlockStored", "block_hashes": [502], "parent_block_hash": 501,
         "token_ids": [8, 9, 10, 11], "block_size": 4, "lora_id": None,
         "medium": "GPU", "lora_name": None, "extra_keys": [None]},
        {"type": "BlockStored", "block_hashes": [700], "parent_block_hash": None,
         "token_ids": [0, 1, 2, 3], "block_size": 4, "lora_id": 1,
         "medium": "GPU", "lora_name": "adapter-a",
         "extra_keys": [["adapter-a", [MMID, 0], "tenant-a"]]},
        ["BlockStored", [800], None, [0, 1, 2, 3], 4, 1, "GPU", "adapter-a", [["adapter-a", "tenant-a"]]],
        {"type": "BlockStored", "block_hashes": [900], "parent_block_hash": None,
         "token_ids": [0, 1, 2, 3], "block_size": 4, "lora_id": None,
         "medium": "GPU", "lora_name": None, "extra_keys": [None]},
    ],
})
