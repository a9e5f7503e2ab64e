// Command kvrouter-epp runs the router as the Endpoint Picker of a Gateway
// API Inference Extension InferencePool (Envoy ext_proc over gRPC, pod
// discovery through the Kubernetes API). Its flags are kvrouter serve's
// plus the picker's own; the work is internal/epp's. It is a binary of its
// own so that kvrouter links no Kubernetes or gRPC code.
package main
