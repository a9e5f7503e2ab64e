package frontend

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// children caches a metric vector's children by key, so a request's
// counts skip WithLabelValues (formatting the label, hashing the values,
// the vector's lock) after the first request of their kind. The frontend
// never deletes a series, so a cached child stays the vector's.
type children[K comparable, M any] struct {
	with func(K) M // the vector's WithLabelValues for a key
	mu   sync.RWMutex
	m    map[K]M
}

func newChildren[K comparable, M any](with func(K) M) *children[K, M] {
	return &children[K, M]{with: with, m: make(map[K]M)}
}

// get returns k's child, resolving it once.
func (c *children[K, M]) get(k K) M {
	c.mu.RLock()
	x, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return x
	}
	x = c.with(k)
	c.mu.Lock()
	c.m[k] = x
	c.mu.Unlock()
	return x
}

// workerCounters are a CounterVec's children labelled by worker id.
func workerCounters(v *prometheus.CounterVec) *children[uint64, prometheus.Counter] {
	return newChildren(func(id uint64) prometheus.Counter { return v.WithLabelValues(strconv.FormatUint(id, 10)) })
}

// labelCounters are a CounterVec's children of one label.
func labelCounters(v *prometheus.CounterVec) *children[string, prometheus.Counter] {
	return newChildren(func(l string) prometheus.Counter { return v.WithLabelValues(l) })
}

// endpointStatus is kvrouter_requests_total's labels.
type endpointStatus struct{ endpoint, status string }

// statusLabel is an HTTP status as a label (the common ones without
// formatting).
func statusLabel(code int) string {
	switch code {
	case 200:
		return "200"
	case 499:
		return "499"
	}
	return strconv.Itoa(code)
}
