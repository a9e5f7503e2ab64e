package kvevents

import (
	"fmt"
	"strconv"
)

// GroupKind is the layer type of a KV cache group (DESIGN.md §13). A model
// whose layers differ keeps one group per type; a prefix is reusable only
// when every group can serve it.
type GroupKind uint8

const (
	// GroupFull is full attention (also MLA and sink full attention): the
	// group holds every block of a reusable prefix. The zero value, so an
	// event without group fields is what it always was.
	GroupFull GroupKind = iota
	// GroupSliding is sliding-window attention over Group.Window tokens: a
	// prefix of L blocks is reusable when the group holds the blocks that
	// cover the window before L.
	GroupSliding
	// GroupState is a recurrent state (Mamba, linear attention): a prefix
	// of L blocks is reusable when the group holds a state checkpoint at L,
	// published as the block L-1.
	GroupState
	numGroupKinds
)

var groupKindNames = [...]string{"full_attention", "sliding_window", "mamba"}

// String returns the kind's wire name ("full_attention", "sliding_window",
// "mamba").
func (k GroupKind) String() string {
	if int(k) < len(groupKindNames) {
		return groupKindNames[k]
	}
	return "group_kind(" + strconv.Itoa(int(k)) + ")"
}

// ParseGroupKind parses a wire group kind name.
func ParseGroupKind(s string) (GroupKind, error) {
	for i, n := range groupKindNames {
		if n == s {
			return GroupKind(i), nil
		}
	}
	return 0, fmt.Errorf("kvevents: unknown kv cache group kind %q", s)
}

// Group names the KV cache group an event's blocks belong to. The zero
// value is the full-attention group 0: a model without groups.
type Group struct {
	// Index is the engine's group index (vLLM's group_idx).
	Index uint32
	Kind  GroupKind
	// Window is the sliding window in tokens (GroupSliding only; 0 when
	// the event does not say, e.g. on removes: the group's stores do).
	Window uint32
}

// IsZero reports whether g is the full-attention group 0.
func (g Group) IsZero() bool { return g == Group{} }

// String formats g as "g1:sliding_window/128", "g2:mamba" or "g0:full_attention".
func (g Group) String() string {
	s := "g" + strconv.FormatUint(uint64(g.Index), 10) + ":" + g.Kind.String()
	if g.Window != 0 {
		s += "/" + strconv.FormatUint(uint64(g.Window), 10)
	}
	return s
}

// Validate reports an unknown kind or a window on a group that is not
// sliding.
func (g Group) Validate() error {
	if g.Kind >= numGroupKinds {
		return fmt.Errorf("kvevents: invalid kv cache group kind %d", g.Kind)
	}
	if g.Window != 0 && g.Kind != GroupSliding {
		return fmt.Errorf("kvevents: %s group carries a sliding window", g.Kind)
	}
	return nil
}
