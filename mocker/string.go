package mocker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvrouter/kvrouter/kvevents"
)

// ShortHash is the 4-hex-digit label of an engine hash used by String and
// FormatEvent (the top 16 bits).
func ShortHash(h uint64) string { return fmt.Sprintf("%04x", h>>48) }

// FormatEvent formats an event compactly with ShortHash labels, e.g.
// "#3 stored parent=9a1f start=2 [c2d1 77aa]" or "#4 removed [9a1f]".
func FormatEvent(ev *kvevents.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s", ev.EventID, ev.Kind)
	if ev.Tier != kvevents.TierDevice {
		fmt.Fprintf(&b, " tier=%s", ev.Tier)
	}
	if !ev.Group.IsZero() {
		fmt.Fprintf(&b, " group=%s", ev.Group)
	}
	switch ev.Kind {
	case kvevents.KindStored:
		if ev.HasParent {
			fmt.Fprintf(&b, " parent=%s", ShortHash(ev.Parent))
		} else {
			b.WriteString(" parent=-")
		}
		if ev.HasStart {
			fmt.Fprintf(&b, " start=%d", ev.StartPosition)
		}
		b.WriteString(" [")
		for i, bl := range ev.Blocks {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(ShortHash(bl.Hash))
		}
		b.WriteByte(']')
	case kvevents.KindRemoved:
		b.WriteString(" [")
		for i, h := range ev.Hashes {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(ShortHash(h))
		}
		b.WriteByte(']')
	}
	return b.String()
}

// String prints the engine's whole state: clock and counters, the running and
// waiting queues, the pool (active blocks with refcounts and hashes, the LRU
// oldest first, the free count). Meant for tests and debugging; O(blocks).
func (e *Engine) String() string {
	var b strings.Builder
	st := e.Stats()
	fmt.Fprintf(&b, "now=%v passes=%d next-event=%d prefill-pending=%d preemptions=%d cached/computed/recomputed=%d/%d/%d\n",
		st.Now, st.Passes, st.Events, st.ActivePrefillTokens, st.Preemptions,
		st.PromptTokensCached, st.PromptTokensComputed, st.RecomputedTokens)
	fmt.Fprintf(&b, "blocks: active=%d inactive=%d free=%d\n", st.ActiveBlocks, st.InactiveBlocks, st.FreeBlocks)
	b.WriteString("running:")
	for _, s := range e.running {
		b.WriteByte(' ')
		e.writeSeq(&b, s)
	}
	b.WriteString("\nwaiting:")
	for i := 0; i < e.waiting.len(); i++ {
		b.WriteByte(' ')
		e.writeSeq(&b, e.waiting.at(i))
	}
	if len(e.held) > 0 {
		b.WriteString("\nheld:")
		for _, h := range e.held {
			fmt.Fprintf(&b, " r%d(until=%v)", h.s.req.ID, h.until)
		}
	}
	b.WriteString("\nactive:")
	for i := range e.pool.blocks {
		bl := &e.pool.blocks[i]
		if bl.ref == 0 {
			continue
		}
		fmt.Fprintf(&b, " b%d", i)
		if bl.cached {
			fmt.Fprintf(&b, "=%s", ShortHash(bl.hash))
		}
		if bl.ref > 1 {
			fmt.Fprintf(&b, "x%d", bl.ref)
		}
	}
	b.WriteString("\nlru:")
	for x := e.pool.head; x != none; x = e.pool.blocks[x].next {
		fmt.Fprintf(&b, " b%d=%s", x, ShortHash(e.pool.blocks[x].hash))
	}
	b.WriteByte('\n')
	if e.hybrid.Enabled() {
		e.writeGroup(&b)
	}
	return b.String()
}

func (e *Engine) writeSeq(b *strings.Builder, s *seq) {
	fmt.Fprintf(b, "r%d(tokens=%d computed=%d out=%d/%d", s.req.ID, s.numTokens, s.numComputed, s.outputs, s.req.MaxOutputTokens)
	if len(s.blocks) > 0 {
		b.WriteString(" blocks=")
		for i, x := range s.blocks {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, "%d", x)
		}
	}
	if e.hybrid.Kind == HybridSWA && len(s.gblocks) > 0 {
		b.WriteString(" g1=")
		for i, x := range s.gblocks {
			if i > 0 {
				b.WriteByte(',')
			}
			if x == none {
				b.WriteByte('-')
			} else {
				fmt.Fprintf(b, "%d", x)
			}
		}
	}
	if s.state != none {
		fmt.Fprintf(b, " state=%d", s.state)
	}
	b.WriteByte(')')
}

// writeGroup prints the second group's pool as String prints the first.
func (e *Engine) writeGroup(b *strings.Builder) {
	g := &e.gpool
	fmt.Fprintf(b, "g1 %s: active=%d inactive=%d free=%d\n", e.hybrid.Group(), g.active, g.lruLen, len(g.free))
	b.WriteString("g1 active:")
	for i := range g.blocks {
		bl := &g.blocks[i]
		if bl.ref == 0 {
			continue
		}
		fmt.Fprintf(b, " b%d", i)
		if bl.cached {
			fmt.Fprintf(b, "=%s", ShortHash(bl.hash))
		}
		if bl.ref > 1 {
			fmt.Fprintf(b, "x%d", bl.ref)
		}
	}
	b.WriteString("\ng1 lru:")
	for x := g.head; x != none; x = g.blocks[x].next {
		fmt.Fprintf(b, " b%d=%s", x, ShortHash(g.blocks[x].hash))
	}
	b.WriteByte('\n')
}

// PipelineString prints the lower tiers and the offload pipeline: each
// level's blocks (LRU order, oldest first; pinned ones marked), the items
// queued, batched and in flight, then the state changes logged since the
// previous call (when Config tracing is on: see TraceOffload).
func (e *Engine) PipelineString() string {
	var b strings.Builder
	for _, lv := range e.levels {
		st := lv.st
		fmt.Fprintf(&b, "%s %d/%d:", st.tier, len(st.byHash), st.capacity)
		for x := st.head; x != nil; x = x.next {
			b.WriteString(" " + ShortHash(x.hash))
		}
		var pinned []string
		for h, x := range st.byHash {
			if x.pins > 0 {
				pinned = append(pinned, fmt.Sprintf("%s*%d", ShortHash(h), x.pins))
			}
		}
		slices.Sort(pinned)
		for _, p := range pinned {
			b.WriteString(" pinned:" + p)
		}
		b.WriteByte('\n')
		p := &lv.pipe
		if len(p.queued) > 0 {
			b.WriteString("  queued:")
			for _, it := range p.queued {
				fmt.Fprintf(&b, " %s@%v", ShortHash(it.blk.hash), it.readyAt)
			}
			b.WriteByte('\n')
		}
		if len(p.open) > 0 {
			fmt.Fprintf(&b, "  batched (since %v):", p.opened)
			for _, it := range p.open {
				b.WriteString(" " + ShortHash(it.blk.hash))
			}
			b.WriteByte('\n')
		}
		for _, bt := range p.inflight {
			fmt.Fprintf(&b, "  in-flight %v..%v:", bt.start, bt.end)
			for _, it := range bt.items {
				b.WriteString(" " + ShortHash(it.blk.hash))
			}
			b.WriteByte('\n')
		}
		for _, l := range p.log {
			b.WriteString("  > " + l + "\n")
		}
		p.log = p.log[:0]
	}
	for _, s := range e.running {
		if s.loading {
			fmt.Fprintf(&b, "r%d loading %d blocks until %v\n", s.req.ID, len(s.onboard), s.loadEnd)
		}
	}
	return b.String()
}

// TraceOffload turns on the log of pipeline state changes that
// PipelineString prints (tests and debugging; off by default).
func (e *Engine) TraceOffload(on bool) { e.traceOffload = on }
