// Package deploy holds kvrouter's deployment artifacts and the tests that
// keep them from rotting: Kubernetes manifests (kubernetes/: the endpoint
// picker with its RBAC, Service and NetworkPolicy, the InferencePool and
// its HTTPRoute, vLLM pods publishing KV events), a Helm chart
// (helm/kvrouter-epp), a
// Grafana dashboard (grafana/) and a Prometheus scrape configuration
// (prometheus/). It has no Go API.
//
// The tests decode every manifest strictly (unknown fields fail) into
// the official API types: k8s.io/api for the core kinds (and the
// NetworkPolicy: ZMQ has no authentication, so the picker's KV-event port
// admits the engine pods only, checked for both), the Gateway API
// Inference Extension's api/v1 for the InferencePool
// (inference.networking.k8s.io/v1) and the Gateway API's apis/v1 for the
// HTTPRoute (gateway.networking.k8s.io/v1). Only these tests import the
// two projects' modules, so they stay out of the kvrouter binary. The chart is rendered
// with Go's text/template and the few Helm functions it uses (no helm
// binary is needed), then checked like the plain manifests.
package deploy
