package deploy

// Local strict mirrors of the two non-core types the manifests use
// (see the package doc): only the documented fields, so any field the
// manifests add beyond the published schema fails to decode.

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// inferencePool mirrors inference.networking.k8s.io/v1 InferencePool
// (gateway-api-inference-extension api/v1/inferencepool_types.go).
type inferencePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		TargetPorts []struct {
			Number int32 `json:"number"`
		} `json:"targetPorts"`
		EndpointPickerRef struct {
			Group       *string `json:"group,omitempty"`
			Kind        string  `json:"kind,omitempty"`
			Name        string  `json:"name"`
			PortNumber  *int32  `json:"portNumber,omitempty"`
			FailureMode string  `json:"failureMode,omitempty"`
		} `json:"endpointPickerRef"`
	} `json:"spec"`
}

// httpRoute mirrors the parts of gateway.networking.k8s.io/v1 HTTPRoute
// the manifests use.
type httpRoute struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		ParentRefs []struct {
			Group string `json:"group,omitempty"`
			Kind  string `json:"kind,omitempty"`
			Name  string `json:"name"`
		} `json:"parentRefs"`
		Rules []struct {
			Matches []struct {
				Path struct {
					Type  string `json:"type"`
					Value string `json:"value"`
				} `json:"path"`
			} `json:"matches,omitempty"`
			BackendRefs []struct {
				Group string `json:"group,omitempty"`
				Kind  string `json:"kind,omitempty"`
				Name  string `json:"name"`
			} `json:"backendRefs"`
			Timeouts *struct {
				Request string `json:"request,omitempty"`
			} `json:"timeouts,omitempty"`
		} `json:"rules"`
	} `json:"spec"`
}

// scrapeFile mirrors the parts of a Prometheus configuration file
// prometheus/scrape.yaml uses.
type scrapeFile struct {
	ScrapeConfigs []struct {
		JobName             string `yaml:"job_name"`
		ScrapeInterval      string `yaml:"scrape_interval"`
		MetricsPath         string `yaml:"metrics_path"`
		KubernetesSDConfigs []struct {
			Role string `yaml:"role"`
		} `yaml:"kubernetes_sd_configs"`
		RelabelConfigs []struct {
			SourceLabels []string `yaml:"source_labels"`
			Action       string   `yaml:"action"`
			Regex        string   `yaml:"regex"`
			Replacement  string   `yaml:"replacement"`
			TargetLabel  string   `yaml:"target_label"`
		} `yaml:"relabel_configs"`
	} `yaml:"scrape_configs"`
}
