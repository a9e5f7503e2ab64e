package frontend

import (
	"sync"

	"github.com/kvrouter/kvrouter/selector"
)

// candBufs recycles the proxy's Decision.Candidates buffers, passed as
// router.Request.Candidates so the router fills them instead of cutting
// new ones from its slab: at 64 workers a decision's breakdowns are about
// 11 KB, most of the frontend's garbage per routed request (and so of its
// GC pauses). A flight owns its buffer and gives it back when it ends
// (flight.recycle), after which nothing reads the decision. A buffer the
// router may still write into (a queued request whose client left) is
// never given back.
var candBufs = sync.Pool{New: func() any { return new([]selector.Breakdown) }}

// getCands returns a buffer for one decision's candidates (empty at
// first: the router then uses its slab, and recycle sizes the buffer).
func getCands() *[]selector.Breakdown { return candBufs.Get().(*[]selector.Breakdown) }

// putCands gives back buf, grown to hold n candidates when it cannot.
func putCands(buf *[]selector.Breakdown, n int) {
	if cap(*buf) < n {
		*buf = make([]selector.Breakdown, 0, n)
	}
	*buf = (*buf)[:0]
	candBufs.Put(buf)
}
