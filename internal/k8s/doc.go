// Package k8s discovers the workers of a Gateway API Inference Extension
// InferencePool: the ready pods matching the pool's label selector, at
// the pool's target port, watched with client-go informers and handed to
// a discovery.Membership (the router's worker set).
//
// A pod is the worker http://<pod-ip>:<target port>. Its worker id is
// the annotation kvrouter.io/worker-id (decimal) when set, for engines
// whose events reach the router through NATS with an id of their own
// (kvrouter bridge --worker-id, kvrouter mocker --worker-id); else
// zmqsub.TopicHash of the pod IP (stable while the pod keeps its IP). KV
// events published to the router's bound ZMQ SUB (--zmq-bind) with
// vLLM's topic kv@<pod-ip>@<model> reach the pod's worker whatever its
// id: the subscriber resolves the topic's pod address to the worker whose
// URL host it is (internal/app).
//
// Connect topology: with PoolConfig.ZMQPort (or a pod's annotation
// kvrouter.io/zmq-endpoint, "tcp://$(POD_IP):5557"), the pool dials each
// member pod's KV-event PUB through SetSources' zmqsub.Subscriber from
// the moment it joins, and stops before it leaves (unready, new IP,
// deleted). PoolConfig.ZMQReplayPort (or kvrouter.io/zmq-replay-endpoint)
// adds the pod's replay endpoint, asked for missed batches on a gap.
//
// Optional annotations kvrouter.io/block-size, kvrouter.io/dp-size,
// kvrouter.io/max-num-seqs, kvrouter.io/max-batched-tokens and
// kvrouter.io/max-loras (LoRA adapter slots) describe the engine (a
// block size other than the router's is refused; max-num-seqs turns on
// the time cost's sequence-cap rule for that pod; max-batched-tokens is
// the budget the queue threshold and the busy prefill fraction are
// fractions of, else the picker's --worker-max-batched-tokens). Editing
// max-num-seqs, max-batched-tokens or max-loras on a running pod
// updates the worker in place; an edit of block-size or dp-size changes
// what its events mean, so the pod leaves and joins anew.
//
// Pool is safe for concurrent use (Members while Run applies pod
// changes). The package imports client-go; the router's core packages
// never do.
package k8s
