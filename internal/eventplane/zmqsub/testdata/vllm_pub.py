#!/usr/bin/python3
"""A vLLM-style KV event publisher on real libzmq (Debian python3-zmq and
python3-msgpack), for kvrouter's interop test.

It binds an XPUB (a PUB on the wire; XPUB lets it see the subscription, so
nothing is published before the subscriber is connected) and a ROUTER for
replay, prints "PUB <port> REPLAY <port>", waits for a subscription, then
publishes --batches batches [topic, seq (8 bytes BE), msgpack payload], seq
from 0. Even batches use vLLM's array events, odd ones the newer map form.
--skip N leaves seq N out of the live stream (it stays in the replay
buffer). Replay: a request [start seq, 8 bytes BE] is answered with
(b"", seq, payload) per buffered batch from start, then (b"", -1, b"").
It exits when stdin closes. --connect EP connects the PUB to a bound SUB
instead (the bind topology; replay still binds). --offset K shifts batch
contents (tokens and hashes) by K batches, so a restarted publisher
(seq again from 0) stores other blocks. --hybrid publishes a hybrid
model's KV cache groups with vLLM's group fields (group_idx,
kv_cache_spec_kind, kv_cache_spec_sliding_window): every batch's blocks in
group 0 (full_attention) and group 1 (sliding_window, window 5 tokens),
its last block in group 2 (mamba, a state checkpoint every 2 blocks) and
both in group 3 (chunked_local_attention, a kind the router does not
model); the last batch also removes group 2's block 10 and group 1's
block 8 (removes name the group index only, as vLLM's do).
"""
import argparse
import select
import sys
import time

import msgpack
import zmq

p = argparse.ArgumentParser()
p.add_argument("--batches", type=int, default=6)
p.add_argument("--block-size", type=int, default=4)
p.add_argument("--skip", type=int, default=-1)
p.add_argument("--topic", default="kv@10.0.0.7:8000@test-model")
p.add_argument("--connect", default="")
p.add_argument("--offset", type=int, default=0)
p.add_argument("--hybrid", action="store_true")
a = p.parse_args()
bs = a.block_size

ctx = zmq.Context()
pub = ctx.socket(zmq.XPUB)
pub.setsockopt(zmq.SNDHWM, 0)
if a.connect:
    pub.connect(a.connect)
    pub_port = 0
else:
    pub_port = pub.bind_to_random_port("tcp://127.0.0.1")
rep = ctx.socket(zmq.ROUTER)
rep_port = rep.bind_to_random_port("tcp://127.0.0.1")
print("PUB %d REPLAY %d" % (pub_port, rep_port), flush=True)

poller = zmq.Poller()
poller.register(pub, zmq.POLLIN)
poller.register(rep, zmq.POLLIN)


def tokens(i):
    # Two blocks of bs tokens per batch, distinct per batch.
    i += a.offset
    return list(range(1000 + i * 2 * bs, 1000 + (i + 1) * 2 * bs))


def stored(i, hashes, parent, toks, group=None):
    # group: (group_idx, kv_cache_spec_kind, kv_cache_spec_sliding_window).
    if i % 2 == 0:
        ev = ["BlockStored", hashes, parent, toks, bs, None, "GPU"]
        if group:
            idx, kind, window = group
            ev += [None, None, idx, kind] + ([window] if window else [])
        return ev
    ev = {"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": parent,
          "token_ids": toks, "block_size": bs, "lora_id": None, "medium": "GPU"}
    if group:
        idx, kind, window = group
        ev.update({"group_idx": idx, "kv_cache_spec_kind": kind})
        if window:
            ev["kv_cache_spec_sliding_window"] = window
    return ev


def hash_of(block):
    # Block n (from 1) is stored by batch (n-1)//2 (no --offset).
    return ((1 << 63) if ((block - 1) // 2) % 2 else 0) + block


def batch(i):
    # Engine hashes: batch i stores blocks 2i+1, 2i+2 (uint64 beyond int64
    # for odd batches) chained on the previous batch's last block.
    base = (1 << 63) if i % 2 else 0
    k = i + a.offset
    hashes = [base + 2 * k + 1, base + 2 * k + 2]
    parent = None
    if i > 0:
        parent = ((1 << 63) if (i - 1) % 2 else 0) + 2 * k
    if not a.hybrid:
        events = [stored(i, hashes, parent, tokens(i))]
    else:
        toks = tokens(i)
        events = [stored(i, hashes, parent, toks, (0, "full_attention", None)),
                  stored(i, hashes, parent, toks, (1, "sliding_window", 5)),
                  stored(i, hashes[1:], hashes[0], toks[bs:], (2, "mamba", None)),
                  stored(i, hashes, parent, toks, (3, "chunked_local_attention", 4))]
        if i == a.batches - 1:
            events.append(["BlockRemoved", [hash_of(10)], "GPU", 2])
            events.append({"type": "BlockRemoved", "block_hashes": [hash_of(8)], "medium": "GPU", "group_idx": 1})
    if i == a.batches - 1:
        # Evict this batch's last block (array form) and an unknown hash (map form).
        events.append(["BlockRemoved", [hashes[1]], "GPU"])
        events.append({"type": "BlockRemoved", "block_hashes": [999999], "medium": "GPU"})
    return msgpack.packb([time.time(), events, 0], use_bin_type=True)


buf = {}
published = False
while True:
    ready = dict(poller.poll(100))
    if pub in ready:
        msg = pub.recv()
        if msg[:1] == b"\x01" and not published:
            published = True
            for i in range(a.batches):
                buf[i] = batch(i)
                if i != a.skip:
                    pub.send_multipart([a.topic.encode(), i.to_bytes(8, "big"), buf[i]])
    if rep in ready:
        ident, *rest = rep.recv_multipart()
        start = int.from_bytes(rest[-1], "big")
        for s in sorted(buf):
            if s >= start:
                rep.send_multipart([ident, b"", s.to_bytes(8, "big"), buf[s]])
        rep.send_multipart([ident, b"", (-1).to_bytes(8, "big", signed=True), b""])
    if select.select([sys.stdin], [], [], 0)[0] and not sys.stdin.read(1):
        break
