package app

import (
	"fmt"

	"github.com/kvrouter/kvrouter/internal/eventplane/zmqguard"
	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
	"github.com/prometheus/client_golang/prometheus"
)

// zmqDrops is kvrouter_zmq_peers_dropped_total{reason}: ZMQ peers the
// frame guard dropped. Every reason is exported from the start (at 0).
func zmqDrops() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kvrouter_zmq_peers_dropped_total",
		Help: "ZMQ peers dropped before zmq4 read their message: a frame or message over --zmq-max-message-bytes, too many frames, a malformed stream or no handshake in time, by reason.",
	}, []string{"reason"})
	for _, r := range zmqguard.Reasons() {
		c.WithLabelValues(r)
	}
	return c
}

// registerZMQ registers the ZMQ ingress's bounds: the drop counter and
// the subscriber's stores ("zmq_hold", "zmq_inflight").
func registerZMQ(reg prometheus.Registerer, drops *prometheus.CounterVec, zs *zmqsub.Subscriber) error {
	for _, c := range []prometheus.Collector{drops, zs.HoldStore(), zs.InflightStore()} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("serve: zmq metrics: %w", err)
		}
	}
	return nil
}
