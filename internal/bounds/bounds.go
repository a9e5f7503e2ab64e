package bounds

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Store is the size of one bounded store and its limits. A limit <= 0 is
// no limit in that unit. Safe for concurrent use.
type Store struct {
	name       string
	maxEntries int64
	maxBytes   int64
	entries    atomic.Int64
	bytes      atomic.Int64

	descs [4]*prometheus.Desc
}

// New returns an empty store named name (the gauges' store label).
func New(name string, maxEntries, maxBytes int64) *Store {
	s := &Store{name: name, maxEntries: maxEntries, maxBytes: maxBytes}
	l := prometheus.Labels{"store": name}
	s.descs = [4]*prometheus.Desc{
		prometheus.NewDesc("kvrouter_store_entries", "Entries a bounded per-client store holds now.", nil, l),
		prometheus.NewDesc("kvrouter_store_bytes", "Bytes a bounded per-client store holds now (its own accounting).", nil, l),
		prometheus.NewDesc("kvrouter_store_limit_entries", "A bounded store's limit in entries (0: none).", nil, l),
		prometheus.NewDesc("kvrouter_store_limit_bytes", "A bounded store's limit in bytes (0: none).", nil, l),
	}
	return s
}

// Name is the store's label.
func (s *Store) Name() string { return s.name }

// Limits returns the store's limits.
func (s *Store) Limits() (entries, bytes int64) { return s.maxEntries, s.maxBytes }

// Size returns what the store holds now.
func (s *Store) Size() (entries, bytes int64) { return s.entries.Load(), s.bytes.Load() }

// Fits reports whether adding n entries of b bytes stays within both
// limits. It does not reserve: an owner that adds concurrently checks and
// adds under its own lock.
func (s *Store) Fits(n, b int64) bool {
	if s.maxEntries > 0 && s.entries.Load()+n > s.maxEntries {
		return false
	}
	if s.maxBytes > 0 && s.bytes.Load()+b > s.maxBytes {
		return false
	}
	return true
}

// Add changes the size by n entries and b bytes (negative to remove).
func (s *Store) Add(n, b int64) {
	s.entries.Add(n)
	s.bytes.Add(b)
}

// Set replaces the size, for an owner that recounts.
func (s *Store) Set(n, b int64) {
	s.entries.Store(n)
	s.bytes.Store(b)
}

// Describe implements prometheus.Collector.
func (s *Store) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range s.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (s *Store) Collect(ch chan<- prometheus.Metric) {
	n, b := s.Size()
	for i, v := range [4]int64{n, b, s.maxEntries, s.maxBytes} {
		if v < 0 {
			v = 0
		}
		ch <- prometheus.MustNewConstMetric(s.descs[i], prometheus.GaugeValue, float64(v))
	}
}
