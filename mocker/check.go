package mocker

import (
	"errors"
	"fmt"

	"github.com/kvrouter/kvrouter/internal/invariants"
)

// invariantsMaxBlocks bounds the KV cache size up to which invariant builds
// run checkInvariants after every pass and cancel, so that large
// simulations under -tags invariants stay usable (the check is O(blocks +
// requests) per pass).
const invariantsMaxBlocks = 1 << 12

// maybeCheck runs checkInvariants in invariant builds (internal/invariants)
// and panics on a violation: broken bookkeeping is a bug in the engine, not
// bad input.
func (e *Engine) maybeCheck() {
	if !invariants.Enabled || len(e.pool.blocks) > invariantsMaxBlocks {
		return
	}
	if err := e.checkInvariants(); err != nil {
		panic(fmt.Sprintf("mocker: invariant violated at %v: %v", e.clock, err))
	}
}

// checkInvariants verifies the pool and queue bookkeeping; O(blocks +
// requests). Tests call it after every step; invariant builds after every
// Step and Cancel (maybeCheck).
func (e *Engine) checkInvariants() error {
	p := &e.pool
	var errs []error
	if got := len(p.free) + p.lruLen + p.active; got != len(p.blocks) {
		errs = append(errs, fmt.Errorf("free %d + inactive %d + active %d != %d blocks", len(p.free), p.lruLen, p.active, len(p.blocks)))
	}
	refs := make([]int32, len(p.blocks))
	for _, s := range e.running {
		for _, b := range s.blocks {
			refs[b]++
		}
		B := e.cfg.BlockSize
		if s.loading {
			if len(s.blocks) != s.registered+len(s.onboard) || s.numComputed != s.registered*B {
				errs = append(errs, fmt.Errorf("loading r%d holds %d blocks (%d registered, %d onboarding) for %d computed tokens",
					s.req.ID, len(s.blocks), s.registered, len(s.onboard), s.numComputed))
			}
			continue
		}
		if len(s.blocks) != (s.numComputed+B-1)/B || s.registered != s.numComputed/B {
			errs = append(errs, fmt.Errorf("r%d holds %d blocks (%d registered) for %d computed tokens",
				s.req.ID, len(s.blocks), s.registered, s.numComputed))
		}
	}
	for _, h := range e.held {
		for _, b := range h.s.blocks {
			refs[b]++
		}
	}
	for i := 0; i < e.waiting.len(); i++ {
		if s := e.waiting.at(i); len(s.blocks) != 0 {
			errs = append(errs, fmt.Errorf("waiting r%d holds blocks", s.req.ID))
		}
	}
	errs = append(errs, checkPool(p, refs, "")...)
	if e.hybrid.Enabled() {
		errs = append(errs, e.checkGroup()...)
	}
	// Lower tiers: store bookkeeping, and every pin of an engine-owned
	// tier belongs to a loading request (G4's pins span engines).
	pins := make(map[*store]map[uint64]int)
	for _, s := range e.running {
		for _, o := range s.onboard {
			if o.li == remoteLevel {
				continue
			}
			st := e.levels[o.li].st
			if pins[st] == nil {
				pins[st] = map[uint64]int{}
			}
			pins[st][o.hash]++
		}
	}
	for _, lv := range e.levels {
		if err := lv.st.check(); err != nil {
			errs = append(errs, err)
		}
		if lv.shared != nil {
			continue
		}
		for h, b := range lv.st.byHash {
			if b.pins != pins[lv.st][h] {
				errs = append(errs, fmt.Errorf("%s block %s has %d pins, %d loading requests read it", lv.st.tier, ShortHash(h), b.pins, pins[lv.st][h]))
			}
		}
	}
	return errors.Join(errs...)
}

// checkPool verifies one pool's bookkeeping against the references its
// holders make (refs, by block); name prefixes the errors.
func checkPool(p *pool, refs []int32, name string) []error {
	var errs []error
	inLRU := make([]bool, len(p.blocks))
	n := 0
	for x := p.head; x != none; x = p.blocks[x].next {
		inLRU[x] = true
		n++
		if n > len(p.blocks) {
			return append(errs, errors.New(name+"LRU has a cycle"))
		}
	}
	if n != p.lruLen {
		errs = append(errs, fmt.Errorf(name+"LRU list has %d blocks, count says %d", n, p.lruLen))
	}
	for _, b := range p.free {
		if p.blocks[b].cached || p.blocks[b].ref != 0 || inLRU[b] {
			errs = append(errs, fmt.Errorf(name+"free block b%d is cached, referenced or in the LRU", b))
		}
	}
	for i := range p.blocks {
		bl := &p.blocks[i]
		if bl.ref != refs[i] {
			errs = append(errs, fmt.Errorf(name+"b%d refcount %d, referenced %d times", i, bl.ref, refs[i]))
		}
		if inLRU[i] && (bl.ref != 0 || !bl.cached) {
			errs = append(errs, fmt.Errorf(name+"LRU block b%d has ref %d cached %t", i, bl.ref, bl.cached))
		}
		if bl.cached && p.byHash[bl.hash] != int32(i) {
			errs = append(errs, fmt.Errorf(name+"cached b%d not indexed by its hash", i))
		}
	}
	for h, b := range p.byHash {
		if !p.blocks[b].cached || p.blocks[b].hash != h {
			errs = append(errs, fmt.Errorf(name+"hash %x maps to b%d which does not hold it", h, b))
		}
	}
	return errs
}
