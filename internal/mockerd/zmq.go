package mockerd

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqguard"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/vmihailenco/msgpack/v5"
)

// ZMQPublisher publishes KV events the way vLLM does
// (--kv-events-config publisher=zmq): a PUB socket sending
// [topic, seq (8 bytes big-endian), payload] with payload the msgpack
// EventBatch [ts, events, dp_rank], each event a tagged array
// ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size,
// lora_id, medium, (lora_name, extra_keys, group_idx, kv_cache_spec_kind,
// kv_cache_spec_sliding_window when needed)], ["BlockRemoved", block_hashes,
// medium, (group_idx)] or ["AllBlocksCleared"]; the group fields only for
// an event of a hybrid model's group other than full-attention group 0
// (Event.Group); and, when a replay endpoint is set, a ROUTER socket
// that answers an 8-byte start seq with every buffered (seq, payload) from
// there, then (-1, empty). DESIGN.md §2, transport 2.
//
// BlockStored needs each block's token ids, which kvevents.Event does not
// carry: the Server resolves them (see blockTokens) and passes them to
// PublishStored. Safe for concurrent use.
type ZMQPublisher struct {
	log    *slog.Logger
	pub    zmq4.Socket
	router zmq4.Socket
	topic  []byte
	bs     int

	mu     sync.Mutex
	seq    int64
	buf    []replayItem // ring of the last maxReplay batches
	cancel context.CancelFunc
	done   chan struct{}
}

type replayItem struct {
	seq     int64
	payload []byte
}

const maxReplay = 10000

// NewZMQPublisher binds the PUB socket on pubEP (e.g. "tcp://127.0.0.1:5557")
// and, when replayEP is not empty, the replay ROUTER socket, and starts the
// replay server goroutine (stopped by Close). blockSize is written into
// BlockStored events.
func NewZMQPublisher(ctx context.Context, pubEP, replayEP string, blockSize int, log *slog.Logger) (*ZMQPublisher, error) {
	zctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	// Peers send the PUB subscriptions and the ROUTER 8-byte replay
	// requests: small messages only, bounded before zmq4 allocates them.
	zctx = zmqguard.WithGuard(zctx, &zmqguard.Guard{Limits: zmqguard.Limits{MaxMessageBytes: 64 << 10},
		OnDrop: func(reason string, remote net.Addr, err error) {
			log.Warn("ZMQ peer dropped", "remote", remote.String(), "reason", reason, "err", err)
		}})
	z := &ZMQPublisher{log: log, pub: zmq4.NewPub(zctx), bs: blockSize, cancel: cancel, done: make(chan struct{})}
	if err := z.pub.Listen(zmqguard.Endpoint(pubEP)); err != nil {
		cancel()
		return nil, fmt.Errorf("mockerd: zmq pub listen %s: %w", pubEP, err)
	}
	if replayEP == "" {
		close(z.done)
		return z, nil
	}
	z.router = zmq4.NewRouter(zctx)
	if err := z.router.Listen(zmqguard.Endpoint(replayEP)); err != nil {
		_ = z.pub.Close()
		cancel()
		return nil, fmt.Errorf("mockerd: zmq replay listen %s: %w", replayEP, err)
	}
	go z.serveReplay(zctx)
	return z, nil
}

// PubAddr is the bound PUB address (useful with port 0).
func (z *ZMQPublisher) PubAddr() string { return z.pub.Addr().String() }

// Close stops the sockets.
func (z *ZMQPublisher) Close() error {
	z.cancel()
	err := z.pub.Close()
	if z.router != nil {
		err = errors.Join(err, z.router.Close())
	}
	<-z.done
	return err
}

// Publish sends one event whose Stored blocks' tokens are given by toks
// (toks[i] for ev.Blocks[i]; nil for other kinds).
func (z *ZMQPublisher) Publish(ev *kvevents.Event, toks [][]uint32) error {
	return z.PublishSalted(ev, toks, "", "")
}

// PublishSalted is Publish for a Stored event of a request with a
// cache_salt or a LoRA adapter: the adapter goes into lora_name and at the
// head of every block's extra_keys, and, with no parent (the block at
// token 0), the salt after it in that block's, as vLLM sends them.
func (z *ZMQPublisher) PublishSalted(ev *kvevents.Event, toks [][]uint32, salt, lora string) error {
	payload, err := z.encode(ev, toks, salt, lora)
	if err != nil {
		return err
	}
	z.mu.Lock()
	seq := z.seq
	z.seq++
	z.buf = append(z.buf, replayItem{seq: seq, payload: payload})
	if len(z.buf) > maxReplay {
		z.buf = z.buf[len(z.buf)-maxReplay:]
	}
	var sb [8]byte
	binary.BigEndian.PutUint64(sb[:], uint64(seq))
	err = z.pub.Send(zmq4.NewMsgFrom(z.topic, sb[:], payload))
	z.mu.Unlock()
	return err
}

func (z *ZMQPublisher) encode(ev *kvevents.Event, toks [][]uint32, salt, lora string) ([]byte, error) {
	var e []any
	medium := Medium(ev.Tier)
	switch ev.Kind {
	case kvevents.KindStored:
		hashes := make([]uint64, len(ev.Blocks))
		var flat []uint32
		for i, b := range ev.Blocks {
			hashes[i] = b.Hash
			if i >= len(toks) || len(toks[i]) != z.bs {
				return nil, fmt.Errorf("mockerd: zmq: no tokens for block %d of event %d", i, ev.EventID)
			}
			flat = append(flat, toks[i]...)
		}
		var parent any
		if ev.HasParent {
			parent = ev.Parent
		}
		e = []any{"BlockStored", hashes, parent, flat, z.bs, nil, medium}
		salted := salt != "" && !ev.HasParent && len(ev.Blocks) > 0
		if salted || lora != "" || !ev.Group.IsZero() {
			// lora_name, then extra_keys: one entry per block, the
			// adapter's name first, the salt in block 0's (vLLM's
			// generate_block_hash_extra_keys).
			var name, keys any
			if salted || lora != "" {
				extra := make([]any, len(ev.Blocks))
				if lora != "" {
					name = lora
					for i := range extra {
						extra[i] = []any{lora}
					}
				}
				if salted {
					k, _ := extra[0].([]any)
					extra[0] = append(k, salt)
				}
				keys = extra
			}
			e = append(e, name, keys)
		}
		if g := ev.Group; !g.IsZero() {
			// A hybrid model's group (DESIGN.md §13): group_idx,
			// kv_cache_spec_kind, kv_cache_spec_sliding_window.
			e = append(e, g.Index, g.Kind.String())
			if g.Window != 0 {
				e = append(e, g.Window)
			}
		}
	case kvevents.KindRemoved:
		e = []any{"BlockRemoved", ev.Hashes, medium}
		if !ev.Group.IsZero() {
			// Removes name only the group; kind and window come from its
			// stores, as vLLM sends them.
			e = append(e, ev.Group.Index)
		}
	case kvevents.KindCleared:
		e = []any{"AllBlocksCleared"}
	default:
		return nil, fmt.Errorf("mockerd: zmq: event kind %s", ev.Kind)
	}
	ts := float64(time.Now().UnixNano()) / 1e9
	return msgpack.Marshal([]any{ts, []any{e}, ev.DPRank})
}

// serveReplay answers replay requests: [identity, (empty), start seq].
func (z *ZMQPublisher) serveReplay(ctx context.Context) {
	defer close(z.done)
	for {
		m, err := z.router.Recv()
		if err != nil {
			if ctx.Err() == nil {
				z.log.Warn("zmq replay recv", "err", err)
			}
			return
		}
		if len(m.Frames) < 2 {
			continue
		}
		id, req := m.Frames[0], m.Frames[len(m.Frames)-1]
		if len(req) != 8 {
			continue
		}
		from := int64(binary.BigEndian.Uint64(req))
		z.mu.Lock()
		items := make([]replayItem, 0, len(z.buf))
		for _, it := range z.buf {
			if it.seq >= from {
				items = append(items, it)
			}
		}
		z.mu.Unlock()
		var sb [8]byte
		for _, it := range items {
			binary.BigEndian.PutUint64(sb[:], uint64(it.seq))
			if err := z.router.Send(zmq4.NewMsgFrom(id, sb[:], it.payload)); err != nil {
				break
			}
		}
		end := int64(-1)
		binary.BigEndian.PutUint64(sb[:], uint64(end))
		_ = z.router.Send(zmq4.NewMsgFrom(id, sb[:], nil))
	}
}
