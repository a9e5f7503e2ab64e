// Package deploy holds kvrouter's deployment artifacts and the tests that
// keep them from rotting: Kubernetes manifests (kubernetes/: the endpoint
// picker with its RBAC and Service, the InferencePool and its HTTPRoute,
// vLLM pods publishing KV events), a Helm chart (helm/kvrouter-epp), a
// Grafana dashboard (grafana/) and a Prometheus scrape configuration
// (prometheus/). It has no Go API.
//
// The tests decode every manifest strictly (unknown fields fail) into
// the official Kubernetes API types (k8s.io/api); the InferencePool
// (inference.networking.k8s.io/v1) and HTTPRoute (gateway.networking.k8s.io/v1)
// are decoded into local mirrors of their documented schemas, because the
// projects' Go modules would pull controller-runtime and the Gateway API
// module into this module's graph for two types. The chart is rendered
// with Go's text/template and the few Helm functions it uses (no helm
// binary is needed), then checked like the plain manifests.
package deploy
