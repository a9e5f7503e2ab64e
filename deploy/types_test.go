package deploy

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
