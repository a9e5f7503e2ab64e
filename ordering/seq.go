package ordering

// Verdict classifies a publisher message's sequence number.
type Verdict uint8

const (
	// SeqFirst: the publisher's first message seen; it sets the baseline.
	SeqFirst Verdict = iota + 1
	// SeqNext: the next message, last+1.
	SeqNext
	// SeqGap: messages last+1 .. seq-1 were lost; replay them or clear.
	SeqGap
	// SeqRestart: the publisher started over (seq at or below the last
	// one, or more than MaxJump above it): clear, then apply.
	SeqRestart
)

func (v Verdict) String() string {
	switch v {
	case SeqFirst:
		return "first"
	case SeqNext:
		return "next"
	case SeqGap:
		return "gap"
	case SeqRestart:
		return "restart"
	}
	return "verdict(?)"
}

// Seq tracks one publisher's message sequence numbers on a transport that
// never redelivers (ZMQ PUB/SUB: vLLM's and SGLang's KV event frames). The
// zero value is ready; MaxJump 0 means DefaultConfig's.
type Seq struct {
	// MaxJump: a seq more than this above the last is a restart rather
	// than a gap (no replay buffer holds a million messages).
	MaxJump uint64
	last    int64
	seen    bool
}

// Classify returns what seq is relative to the last one and makes it the
// last one (a gap's missing messages, when replayed, go through Replayed).
func (s *Seq) Classify(seq int64) Verdict {
	last, seen := s.last, s.seen
	s.last, s.seen = seq, true
	maxJump := s.MaxJump
	if maxJump == 0 {
		maxJump = DefaultConfig().MaxJump
	}
	switch {
	case !seen:
		return SeqFirst
	case seq == last+1:
		return SeqNext
	case seq <= last:
		// NB: on a live PUB/SUB subscription a seq never repeats; seq ==
		// last is a restart after exactly one message (vLLM numbers from
		// 0 again), not a duplicate.
		return SeqRestart
	case uint64(seq-last) > maxJump:
		return SeqRestart
	}
	return SeqGap
}

// Last returns the last seq and whether one was seen.
func (s *Seq) Last() (int64, bool) { return s.last, s.seen }

// Replayed records a replayed message's seq as the last one.
func (s *Seq) Replayed(seq int64) { s.last, s.seen = seq, true }
