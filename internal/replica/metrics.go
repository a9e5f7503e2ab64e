package replica

import "github.com/prometheus/client_golang/prometheus"

// Collector exports a Replica's snapshot and lease state (read from
// Status at each scrape). Across replicas, the sum of
// kvrouter_replica_lease_held is 1 while snapshots are written; 0 for
// longer than the lease TTL means nobody writes them.
type Collector struct {
	r                                           *Replica
	held, errs, written, last, skipped, applied *prometheus.Desc
}

// NewCollector returns the collector of r; register it on the serve
// registry.
func NewCollector(r *Replica) *Collector {
	l := prometheus.Labels{"replica": r.ID()}
	return &Collector{r: r,
		held:    prometheus.NewDesc("kvrouter_replica_lease_held", "1 while this replica holds the snapshot writer's lease.", nil, l),
		errs:    prometheus.NewDesc("kvrouter_replica_lease_errors_total", "Lease bucket operations without a definitive answer (bucket gone, NATS unreachable); each one makes the next try recreate the bucket.", nil, l),
		written: prometheus.NewDesc("kvrouter_replica_snapshots_written_total", "Snapshots this replica wrote.", nil, l),
		last:    prometheus.NewDesc("kvrouter_replica_last_snapshot_timestamp_seconds", "When this replica last wrote a snapshot (0: never).", nil, l),
		skipped: prometheus.NewDesc("kvrouter_replica_snapshots_skipped_total", "Unreadable snapshot objects (corrupt, undecodable, beyond bounds) restores passed over.", nil, l),
		applied: prometheus.NewDesc("kvrouter_replica_applied_seq", "Last KV event stream sequence handed to the index.", nil, l),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.held, c.errs, c.written, c.last, c.skipped, c.applied} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.r.Status()
	held, last := 0.0, 0.0
	if st.LeaseHeld {
		held = 1
	}
	if !st.LastSnapshot.IsZero() {
		last = float64(st.LastSnapshot.UnixNano()) / 1e9
	}
	ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, held)
	ch <- prometheus.MustNewConstMetric(c.errs, prometheus.CounterValue, float64(st.LeaseErrors))
	ch <- prometheus.MustNewConstMetric(c.written, prometheus.CounterValue, float64(st.Snapshots))
	ch <- prometheus.MustNewConstMetric(c.last, prometheus.GaugeValue, last)
	ch <- prometheus.MustNewConstMetric(c.skipped, prometheus.CounterValue, float64(st.SnapshotsSkipped))
	ch <- prometheus.MustNewConstMetric(c.applied, prometheus.GaugeValue, float64(st.Applied))
}
