package indexer

import "time"

// The accessors below report the parameters an index was built with, so
// shells and their tests can check that a composed configuration reached
// the index (defaults applied).

// Stride is the jump-search stride J in blocks (FlashConfig.Stride).
func (f *Flash) Stride() int { return f.stride }

// TTL is how long a routed request's blocks are kept (ApproxConfig.TTL).
func (a *Approx) TTL() time.Duration { return time.Duration(a.ttl) }

// Writers is the number of writer goroutines (ConcurrentConfig.Writers).
func (c *Concurrent) Writers() int { return len(c.queues) }
