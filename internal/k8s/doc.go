// Package k8s discovers the workers of a Gateway API Inference Extension
// InferencePool: the ready pods matching the pool's label selector, at
// the pool's target port, watched with client-go informers and handed to
// a discovery.Membership (the router's worker set).
//
// A pod's router identity (the worker id its KV events carry) is, in
// order:
//
//   - the annotation kvrouter.io/worker-id (decimal), for engines whose
//     events reach the router through NATS with an id of their own
//     (kvrouter bridge --worker-id, kvrouter mocker --worker-id);
//   - else zmqsub.TopicHash of the pod IP, the id the router's bound ZMQ
//     SUB (kvrouter epp --zmq-bind) gives events published with vLLM's
//     topic kv@<pod-ip>@<model> (--kv-events-config topic).
//
// Optional annotations kvrouter.io/block-size and kvrouter.io/dp-size
// describe the engine (a block size other than the router's is refused).
//
// Pool is safe for concurrent use: TopicWorker is called from the ZMQ
// subscriber's goroutines while Run applies pod changes. The package
// imports client-go; the router's core packages never do.
package k8s
