package kvevents

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
)

// Tier is the storage tier a block lives in (DESIGN.md §7).
type Tier uint8

const (
	TierDevice     Tier = iota // GPU memory (G1); the zero value
	TierHostPinned             // pinned host memory (G2)
	TierDisk                   // local disk (G3)
	TierExternal               // object store or remote (G4)
	numTiers
)

// NumTiers is the number of storage tiers.
const NumTiers = int(numTiers)

var tierNames = [...]string{"device", "host_pinned", "disk", "external"}

// String returns the tier's wire name ("device", "host_pinned", "disk", "external").
func (t Tier) String() string {
	if int(t) < len(tierNames) {
		return tierNames[t]
	}
	return "tier(" + strconv.Itoa(int(t)) + ")"
}

// ParseTier parses a wire tier name.
func ParseTier(s string) (Tier, error) {
	for i, n := range tierNames {
		if n == s {
			return Tier(i), nil
		}
	}
	return 0, fmt.Errorf("kvevents: unknown storage tier %q", s)
}

// MarshalText implements encoding.TextMarshaler.
func (t Tier) MarshalText() ([]byte, error) {
	if int(t) >= len(tierNames) {
		return nil, fmt.Errorf("kvevents: invalid tier %d", t)
	}
	return []byte(tierNames[t]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (t *Tier) UnmarshalText(b []byte) error {
	v, err := ParseTier(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// Worker names one data-parallel rank of one worker: the unit that holds a
// KV cache. Worker IDs are uint64, ranks uint32.
type Worker struct {
	ID   uint64
	Rank uint32
}

// String formats a worker as "ID" for rank 0 and "ID/rRANK" otherwise.
func (w Worker) String() string {
	if w.Rank == 0 {
		return strconv.FormatUint(w.ID, 10)
	}
	return strconv.FormatUint(w.ID, 10) + "/r" + strconv.FormatUint(uint64(w.Rank), 10)
}

// Less orders workers by ID, then rank.
func (w Worker) Less(o Worker) bool {
	if w.ID != o.ID {
		return w.ID < o.ID
	}
	return w.Rank < o.Rank
}

// Compare orders workers by ID, then rank: -1, 0 or +1, for slices.SortFunc.
func (w Worker) Compare(o Worker) int {
	if c := cmp.Compare(w.ID, o.ID); c != 0 {
		return c
	}
	return cmp.Compare(w.Rank, o.Rank)
}

// Kind is what an event does.
type Kind uint8

const (
	KindStored  Kind = iota + 1 // blocks were cached
	KindRemoved                 // blocks were evicted
	KindCleared                 // everything of this worker+rank was dropped
)

func (k Kind) String() string {
	switch k {
	case KindStored:
		return "stored"
	case KindRemoved:
		return "removed"
	case KindCleared:
		return "cleared"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Block is one cached block in a Stored event.
type Block struct {
	// Hash is the engine's sequence hash of the block (opaque to the router;
	// events address blocks by it). JSON "block_hash".
	Hash uint64
	// Local is the block's local hash (kvhash.Local of its tokens), the key
	// prompts are matched on. JSON "tokens_hash".
	Local uint64
}

// Event is one RouterEvent of DESIGN.md §2, flattened: the worker, tier,
// event id and rank, and the payload of one of the three kinds.
//
// JSON wire form (Dynamo-compatible):
//
//	{"worker_id":1,"storage_tier":"device","event":{"event_id":7,
//	 "data":{"stored":{"parent_hash":null,"start_position":null,"blocks":[{"block_hash":1,"tokens_hash":2}]}},"dp_rank":0}}
//	... "data":{"removed":{"block_hashes":[1,2]}} ... "data":"cleared"
//
// (Key order as Dynamo's serde emits it; decoders accept any order.) See
// AppendJSON/DecodeJSON, AppendMsgpack/DecodeMsgpack and VLLMDecoder.
type Event struct {
	WorkerID uint64
	Tier     Tier
	EventID  uint64 // monotonic per worker+rank
	DPRank   uint32
	Kind     Kind
	// Group is the KV cache group of a hybrid model the blocks belong to
	// (DESIGN.md §13); the zero value, full-attention group 0, for every
	// other model. Cleared events carry none: they drop every group.
	Group Group

	// Stored only. HasParent false means the blocks hang off the root.
	HasParent bool
	Parent    uint64 // engine hash of the parent block
	// HasStart reports whether StartPosition (the position of the first
	// block in its sequence, in blocks) was given.
	HasStart      bool
	StartPosition uint32
	Blocks        []Block

	// Removed only: engine hashes of the evicted blocks.
	Hashes []uint64
}

// Worker returns the worker+rank the event belongs to.
func (e *Event) Worker() Worker { return Worker{ID: e.WorkerID, Rank: e.DPRank} }

// NumBlocks is the number of blocks the event names (stored or removed).
func (e *Event) NumBlocks() int { return len(e.Blocks) + len(e.Hashes) }

// String is a compact one-line form for logs and test output, e.g.
// "w1 #7 stored parent=- [h1:l1 h2:l2]".
func (e Event) String() string {
	s := fmt.Sprintf("w%s #%d %s", e.Worker(), e.EventID, e.Kind)
	if e.Tier != TierDevice {
		s += " tier=" + e.Tier.String()
	}
	if !e.Group.IsZero() {
		s += " group=" + e.Group.String()
	}
	switch e.Kind {
	case KindStored:
		if e.HasParent {
			s += fmt.Sprintf(" parent=%d", e.Parent)
		} else {
			s += " parent=-"
		}
		if e.HasStart {
			s += fmt.Sprintf(" start=%d", e.StartPosition)
		}
		s += " ["
		for i, b := range e.Blocks {
			if i > 0 {
				s += " "
			}
			s += fmt.Sprintf("%d:%d", b.Hash, b.Local)
		}
		s += "]"
	case KindRemoved:
		s += fmt.Sprintf(" %v", e.Hashes)
	}
	return s
}

// Validate reports what makes e unencodable or inconsistent: an unknown
// Kind or Tier, Hashes on a Stored event, Blocks on a Removed one, or a
// payload or parent on a Cleared one. Decoders only produce valid events.
func (e *Event) Validate() error {
	var errs []error
	if e.Tier >= numTiers {
		errs = append(errs, fmt.Errorf("kvevents: invalid tier %d", e.Tier))
	}
	if err := e.Group.Validate(); err != nil {
		errs = append(errs, err)
	}
	switch e.Kind {
	case KindStored:
		if len(e.Hashes) > 0 {
			errs = append(errs, fmt.Errorf("kvevents: stored event carries %d removed hashes", len(e.Hashes)))
		}
	case KindRemoved:
		if len(e.Blocks) > 0 || e.HasParent || e.HasStart {
			errs = append(errs, fmt.Errorf("kvevents: removed event carries stored fields"))
		}
	case KindCleared:
		if len(e.Blocks) > 0 || len(e.Hashes) > 0 || e.HasParent || e.HasStart || !e.Group.IsZero() {
			errs = append(errs, fmt.Errorf("kvevents: cleared event carries a payload"))
		}
	default:
		errs = append(errs, fmt.Errorf("kvevents: invalid kind %d", e.Kind))
	}
	return errors.Join(errs...)
}
