package deploy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"

	"github.com/kvrouter/kvrouter/internal/eventplane/zmqsub"
	"github.com/kvrouter/kvrouter/internal/k8s"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	inferencev1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

// objects are the decoded documents of a set of manifests.
type objects struct {
	deployments []*appsv1.Deployment
	services    []*corev1.Service
	accounts    []*corev1.ServiceAccount
	roles       []*rbacv1.Role
	bindings    []*rbacv1.RoleBinding
	pools       []*inferencev1.InferencePool
	routes      []*gwv1.HTTPRoute
	policies    []*networkingv1.NetworkPolicy
}

// decode splits a multi-document YAML stream and decodes each document
// strictly (unknown or duplicate fields fail: sigs.k8s.io/yaml converts
// to JSON and decodes with unknown fields disallowed) into its kind's
// official API type.
func decode(t *testing.T, name string, data []byte, into *objects) {
	t.Helper()
	for i, doc := range bytes.Split(data, []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("%s doc %d: %v", name, i, err)
		}
		var obj any
		switch tm.APIVersion + " " + tm.Kind {
		case "apps/v1 Deployment":
			o := &appsv1.Deployment{}
			into.deployments, obj = append(into.deployments, o), o
		case "v1 Service":
			o := &corev1.Service{}
			into.services, obj = append(into.services, o), o
		case "v1 ServiceAccount":
			o := &corev1.ServiceAccount{}
			into.accounts, obj = append(into.accounts, o), o
		case "rbac.authorization.k8s.io/v1 Role":
			o := &rbacv1.Role{}
			into.roles, obj = append(into.roles, o), o
		case "rbac.authorization.k8s.io/v1 RoleBinding":
			o := &rbacv1.RoleBinding{}
			into.bindings, obj = append(into.bindings, o), o
		case "inference.networking.k8s.io/v1 InferencePool":
			o := &inferencev1.InferencePool{}
			into.pools, obj = append(into.pools, o), o
		case "gateway.networking.k8s.io/v1 HTTPRoute":
			o := &gwv1.HTTPRoute{}
			into.routes, obj = append(into.routes, o), o
		case "networking.k8s.io/v1 NetworkPolicy":
			o := &networkingv1.NetworkPolicy{}
			into.policies, obj = append(into.policies, o), o
		default:
			t.Fatalf("%s doc %d: unexpected %s %s", name, i, tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatalf("%s doc %d (%s): %v", name, i, tm.Kind, err)
		}
	}
}

func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// TestStrictDecodeAll decodes every manifest under kubernetes/ strictly;
// a manifest with an unknown field (a typo, a field of another API
// version) fails here.
func TestStrictDecodeAll(t *testing.T) {
	checkWiring(t, decodeManifests(t), "kvrouter-epp")
}

// decodeManifests decodes every file of deploy/kubernetes strictly.
func decodeManifests(t *testing.T) objects {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	var o objects
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		decode(t, f, data, &o)
	}
	return o
}

// TestStrictDecodeRejectsUnknown proves the decoding is strict.
func TestStrictDecodeRejectsUnknown(t *testing.T) {
	for _, doc := range []string{
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 1}\n",
		// v1alpha2's field names, rejected by v1.
		"apiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\nmetadata: {name: x}\nspec: {targetPortNumber: 8000}\n",
		"apiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\nmetadata: {name: x}\nspec: {endpointPickerRef: {name: e, portNumber: 9002}}\n",
		"apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: x}\nspec: {rules: [{backendRef: {name: p}}]}\n",
	} {
		var tm metav1.TypeMeta
		_ = yaml.Unmarshal([]byte(doc), &tm)
		var obj any = &appsv1.Deployment{}
		switch tm.Kind {
		case "InferencePool":
			obj = &inferencev1.InferencePool{}
		case "HTTPRoute":
			obj = &gwv1.HTTPRoute{}
		}
		if err := yaml.Unmarshal([]byte(doc), obj); err != nil {
			t.Fatalf("lenient decode failed, the test proves nothing: %v", err)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err == nil {
			t.Fatalf("strict decode accepted an unknown field:\n%s", doc)
		}
	}
}

// TestHelmChart renders the chart with its default values and with
// overrides, and checks the output like the plain manifests.
func TestHelmChart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overrides map[string]any
		release   string
		engines   string // the pods the NetworkPolicy admits to the KV-event port
	}{
		{"defaults", nil, "kvr", "app=vllm-llama3-8b"},
		{"two-labels", map[string]any{"inferencePool": map[string]any{"matchLabels": map[string]any{"app": "vllm", "model": "llama3"}},
			"epp": map[string]any{"extraArgs": []any{"--busy-kv-usage=0.9"}}}, "gw", "app=vllm,model=llama3"},
		{"engine-labels", map[string]any{"networkPolicy": map[string]any{"engineLabels": map[string]any{"app": "vllm-llama3-8b", "role": "engine"}}},
			"kvr", "app=vllm-llama3-8b,role=engine"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := renderChart(t, "helm/kvrouter-epp", tc.release, tc.overrides)
			var o objects
			decode(t, "chart", out, &o)
			checkWiring(t, o, tc.release+"-epp")
			if got := engineSelector(t, o, tc.release+"-epp"); got.String() != tc.engines {
				t.Fatalf("KV-event peers %q, want %q", got, tc.engines)
			}
		})
	}
	out := renderChart(t, "helm/kvrouter-epp", "kvr", map[string]any{"networkPolicy": map[string]any{"create": false}})
	var o objects
	decode(t, "chart", out, &o)
	if len(o.policies) != 0 {
		t.Fatalf("networkPolicy.create false rendered %d policies", len(o.policies))
	}
}

// checkWiring checks that the objects fit together: the picker's flags
// name the pool's selector and port, the pool names the picker's
// Service and gRPC port, the route sends to the pool, RBAC lets the
// picker watch pods, and (when present) the vLLM pods publish their KV
// events to the picker's ZMQ port with a topic the picker parses.
func checkWiring(t *testing.T, o objects, epp string) {
	t.Helper()
	dep := findDeployment(t, o, epp)
	svc := findService(t, o, epp)
	c := dep.Spec.Template.Spec.Containers[0]
	if len(c.Command) != 1 || c.Command[0] != "kvrouter-epp" {
		t.Fatalf("%s runs %v %v, want kvrouter-epp", epp, c.Command, c.Args)
	}
	args := flags(c.Args)
	port := func(name string) int32 {
		for _, p := range svc.Spec.Ports {
			if p.Name == name {
				return p.Port
			}
		}
		t.Fatalf("service %s has no %s port", epp, name)
		return 0
	}
	if got := hostPort(t, args["grpc-addr"]); got != port("grpc") {
		t.Fatalf("--grpc-addr port %d, service grpc port %d", got, port("grpc"))
	}
	if got := hostPort(t, strings.TrimPrefix(args["zmq-bind"], "tcp://")); got != port("kv-events") {
		t.Fatalf("--zmq-bind port %d, service kv-events port %d", got, port("kv-events"))
	}
	if dep.Spec.Template.Spec.ServiceAccountName != epp || len(o.accounts) == 0 {
		t.Fatalf("deployment service account %q", dep.Spec.Template.Spec.ServiceAccountName)
	}
	if !podWatchAllowed(o, epp) {
		t.Fatalf("no role bound to %s allows list+watch on pods", epp)
	}
	if want := dep.Spec.Template.Annotations["prometheus.io/port"]; want != strconv.Itoa(int(port("metrics"))) || hostPort(t, args["addr"]) != port("metrics") {
		t.Fatalf("metrics: annotation port %q, --addr %q, service %d", want, args["addr"], port("metrics"))
	}
	if len(o.pools) != 1 {
		t.Fatalf("%d InferencePools, want 1", len(o.pools))
	}
	pool := o.pools[0]
	sel, err := labels.Parse(args["pool-selector"])
	if err != nil {
		t.Fatal(err)
	}
	poolLabels := labels.Set{}
	for k, v := range pool.Spec.Selector.MatchLabels {
		poolLabels[string(k)] = string(v)
	}
	if !sel.Matches(poolLabels) || sel.String() != labels.SelectorFromSet(poolLabels).String() {
		t.Fatalf("--pool-selector %q, pool selector %v", args["pool-selector"], pool.Spec.Selector.MatchLabels)
	}
	if len(pool.Spec.TargetPorts) != 1 || strconv.Itoa(int(pool.Spec.TargetPorts[0].Number)) != args["pool-target-port"] {
		t.Fatalf("pool target ports %v, --pool-target-port %s", pool.Spec.TargetPorts, args["pool-target-port"])
	}
	ref := pool.Spec.EndpointPickerRef
	if string(ref.Name) != epp || ref.Kind != "Service" || ref.Port == nil || int32(ref.Port.Number) != port("grpc") {
		t.Fatalf("endpointPickerRef %+v, want service %s port %d", ref, epp, port("grpc"))
	}
	if len(o.routes) != 1 || len(o.routes[0].Spec.Rules) == 0 || len(o.routes[0].Spec.Rules[0].BackendRefs) == 0 {
		t.Fatalf("want one HTTPRoute with a backend")
	}
	if b := o.routes[0].Spec.Rules[0].BackendRefs[0]; b.Kind == nil || *b.Kind != "InferencePool" ||
		b.Group == nil || *b.Group != gwv1.Group(inferencev1.GroupVersion.Group) || string(b.Name) != pool.Name {
		t.Fatalf("the HTTPRoute does not send to InferencePool %s", pool.Name)
	}
	engines := engineSelector(t, o, epp)
	for _, d := range o.deployments {
		if d.Name == epp {
			continue
		}
		checkEngine(t, d, sel, args, epp, port("kv-events"))
		if !engines.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Fatalf("engine %s pods %v may not reach the KV-event port (%q)", d.Name, d.Spec.Template.Labels, engines)
		}
	}
}

// engineSelector checks the picker's NetworkPolicy and returns the pods
// it admits to the KV-event port: the policy selects the picker's pods
// for ingress, keeps the gRPC and metrics ports open, and admits the
// kv-events port only from pods of one label selector (no other peer: no
// IP block, namespace or empty selector, no rule open to all).
func engineSelector(t *testing.T, o objects, epp string) labels.Selector {
	t.Helper()
	dep := findDeployment(t, o, epp)
	var np *networkingv1.NetworkPolicy
	for _, p := range o.policies {
		if p.Name == epp {
			np = p
		}
	}
	if np == nil {
		t.Fatalf("no NetworkPolicy %s guarding the KV-event port (ZMQ has no authentication)", epp)
	}
	if sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector); err != nil || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) ||
		!slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
		t.Fatalf("NetworkPolicy %s does not restrict ingress to the picker's pods (%v, %v)", epp, np.Spec.PodSelector, np.Spec.PolicyTypes)
	}
	// A rule admits a port when it lists it, or lists no port.
	admits := func(r networkingv1.NetworkPolicyIngressRule, port string) bool {
		return len(r.Ports) == 0 || slices.ContainsFunc(r.Ports, func(p networkingv1.NetworkPolicyPort) bool {
			return p.Port != nil && p.Port.String() == port
		})
	}
	for _, port := range []string{"grpc", "metrics"} {
		if !slices.ContainsFunc(np.Spec.Ingress, func(r networkingv1.NetworkPolicyIngressRule) bool { return admits(r, port) }) {
			t.Fatalf("NetworkPolicy %s shuts the %s port", epp, port)
		}
	}
	var engines labels.Selector
	for _, r := range np.Spec.Ingress {
		if !admits(r, "kv-events") {
			continue
		}
		if len(r.From) != 1 || r.From[0].IPBlock != nil || r.From[0].NamespaceSelector != nil || r.From[0].PodSelector == nil ||
			len(r.From[0].PodSelector.MatchLabels)+len(r.From[0].PodSelector.MatchExpressions) == 0 || engines != nil {
			t.Fatalf("NetworkPolicy %s admits the KV-event port from %+v, want the engine pods only", epp, r.From)
		}
		var err error
		if engines, err = metav1.LabelSelectorAsSelector(r.From[0].PodSelector); err != nil {
			t.Fatal(err)
		}
	}
	if engines == nil {
		t.Fatalf("NetworkPolicy %s admits no engine to the KV-event port", epp)
	}
	return engines
}

// checkEngine checks a vLLM deployment of the pool: its pods match the
// selector, serve on the target port, use the picker's block size and
// publish KV events to the picker with a topic the picker maps to them,
// and annotate their pods with their --max-num-seqs.
func checkEngine(t *testing.T, d *appsv1.Deployment, sel labels.Selector, eppArgs map[string]string, epp string, zmqPort int32) {
	t.Helper()
	if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Fatalf("engine %s pods %v are not in the pool", d.Name, d.Spec.Template.Labels)
	}
	c := d.Spec.Template.Spec.Containers[0]
	args := flags(c.Args)
	if args["port"] != eppArgs["pool-target-port"] || args["block-size"] != eppArgs["block-size"] {
		t.Fatalf("engine port %s block size %s; picker target port %s block size %s",
			args["port"], args["block-size"], eppArgs["pool-target-port"], eppArgs["block-size"])
	}
	// The picker reads the engine's sequence cap from the pod annotation.
	if ann := d.Spec.Template.Annotations[k8s.AnnotationMaxNumSeqs]; ann != args["max-num-seqs"] {
		t.Fatalf("engine %s: --max-num-seqs %q, annotation %s %q", d.Name, args["max-num-seqs"], k8s.AnnotationMaxNumSeqs, ann)
	}
	var ev struct {
		Enable    bool   `json:"enable_kv_cache_events"`
		Publisher string `json:"publisher"`
		Endpoint  string `json:"endpoint"`
		Topic     string `json:"topic"`
	}
	if err := yaml.UnmarshalStrict([]byte(args["kv-events-config"]), &ev); err != nil {
		t.Fatalf("engine %s --kv-events-config: %v", d.Name, err)
	}
	if !ev.Enable || ev.Publisher != "zmq" || ev.Endpoint != fmt.Sprintf("tcp://%s:%d", epp, zmqPort) {
		t.Fatalf("engine %s publishes %+v, want zmq to tcp://%s:%d", d.Name, ev, epp, zmqPort)
	}
	// Kubernetes expands $(POD_IP) from the env; the picker must see the
	// pod IP in the topic (its worker id: zmqsub.TopicHash of it).
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "POD_IP" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP"
	}) {
		t.Fatalf("engine %s has no POD_IP from status.podIP", d.Name)
	}
	pod, model, ok := zmqsub.ParseTopic(strings.ReplaceAll(ev.Topic, "$(POD_IP)", "10.1.2.3"))
	if !ok || pod != "10.1.2.3" || model != eppArgs["model"] {
		t.Fatalf("topic %q: pod %q model %q; want the pod IP and the picker's model %q", ev.Topic, pod, model, eppArgs["model"])
	}
}

func findDeployment(t *testing.T, o objects, name string) *appsv1.Deployment {
	for _, d := range o.deployments {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no deployment %s", name)
	return nil
}

func findService(t *testing.T, o objects, name string) *corev1.Service {
	for _, s := range o.services {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no service %s", name)
	return nil
}

func podWatchAllowed(o objects, account string) bool {
	for _, b := range o.bindings {
		if !slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool { return s.Kind == "ServiceAccount" && s.Name == account }) {
			continue
		}
		for _, r := range o.roles {
			if r.Name != b.RoleRef.Name {
				continue
			}
			for _, rule := range r.Rules {
				if slices.Contains(rule.APIGroups, "") && slices.Contains(rule.Resources, "pods") &&
					slices.Contains(rule.Verbs, "list") && slices.Contains(rule.Verbs, "watch") {
					return true
				}
			}
		}
	}
	return false
}

// flags maps --name=value arguments to name -> value.
func flags(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		if k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "="); ok {
			out[k] = v
		}
	}
	return out
}

func hostPort(t *testing.T, addr string) int32 {
	t.Helper()
	i := strings.LastIndexByte(addr, ':')
	p, err := strconv.Atoi(addr[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("address %q has no port", addr)
	}
	return int32(p)
}

// renderChart renders a chart's templates with its values.yaml merged
// with overrides, as `helm template` would for the functions the chart
// uses (quote, toYaml, nindent).
func renderChart(t *testing.T, dir, release string, overrides map[string]any) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	merge(values, overrides)
	funcs := template.FuncMap{
		"quote": func(v any) string { return strconv.Quote(fmt.Sprint(v)) },
		"toYaml": func(v any) string {
			b, err := yaml.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			return strings.TrimSuffix(string(b), "\n")
		},
		"nindent": func(n int, s string) string {
			pad := strings.Repeat(" ", n)
			return "\n" + pad + strings.ReplaceAll(s, "\n", "\n"+pad)
		},
	}
	files, err := filepath.Glob(filepath.Join(dir, "templates", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	data := map[string]any{"Values": values, "Release": map[string]any{"Name": release, "Namespace": "default"}}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tpl, err := template.New(filepath.Base(f)).Funcs(funcs).Option("missingkey=error").Parse(string(src))
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("\n---\n")
		if err := tpl.Execute(&out, data); err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}

func merge(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}
