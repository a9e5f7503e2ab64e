package sim

import (
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// evKind is what a scheduled event does.
type evKind uint8

const (
	evArrival evKind = iota // the next trace arrival(s)
	evPassEnd               // worker w's forward pass ends
	evDeliver               // KV events of worker w reach the router
	evMetrics               // worker w's KV usage reaches the router
	evOffload               // worker w's idle engine has offloads due
	evAdmit                 // request i's adapter has loaded on worker w
)

// event is one entry of the discrete-event queue.
type event struct {
	t    time.Duration
	seq  uint64
	kind evKind
	w    int32
	i    int32            // evAdmit: the request
	f    float64          // evMetrics: usage
	evs  []kvevents.Event // evDeliver
}

// eventQueue is a binary min-heap ordered by (t, seq). seq grows with every
// push, so events at the same time run in the order they were scheduled:
// the loop is deterministic and a worker's KV events (all delayed by the
// same EventDelay) are applied in emission order.
//
// NB: hand-written rather than container/heap to avoid the interface calls
// and the boxing of every event on the hot path.
type eventQueue struct {
	h   []event
	seq uint64
}

func (q *eventQueue) len() int { return len(q.h) }

func less(a, b *event) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	return a.seq < b.seq
}

func (q *eventQueue) push(e event) {
	e.seq = q.seq
	q.seq++
	q.h = append(q.h, e)
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(&q.h[i], &q.h[p]) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

func (q *eventQueue) pop() event {
	top := q.h[0]
	n := len(q.h) - 1
	q.h[0] = q.h[n]
	q.h[n] = event{}
	q.h = q.h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && less(&q.h[r], &q.h[l]) {
			m = r
		}
		if !less(&q.h[m], &q.h[i]) {
			break
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
	return top
}
