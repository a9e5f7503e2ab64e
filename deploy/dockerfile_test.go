package deploy

import (
	"os"
	"regexp"
	"testing"
)

// TestDockerfileShipsEveryCommand: the image builds and copies every
// binary the manifests and the Helm chart run (command:), from a cmd/
// directory that exists, and does not ship the study tools.
func TestDockerfileShipsEveryCommand(t *testing.T) {
	raw, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	built := map[string]bool{}
	for _, m := range regexp.MustCompile(`go build [^\n]*-o /out/(\S+) \./cmd/(\S+)`).FindAllStringSubmatch(string(raw), -1) {
		if m[1] != m[2] {
			t.Errorf("/out/%s is built from ./cmd/%s", m[1], m[2])
		}
		if _, err := os.Stat("../cmd/" + m[2]); err != nil {
			t.Errorf("Dockerfile builds ./cmd/%s: %v", m[2], err)
		}
		if !regexp.MustCompile(`COPY --from=build [^\n]*/out/` + regexp.QuoteMeta(m[1]) + `\b`).Match(raw) {
			t.Errorf("%s is built but not copied into the image", m[1])
		}
		built[m[1]] = true
	}
	if built["kvrouter-study"] {
		t.Error("the image ships kvrouter-study (developer tool, plotting code)")
	}
	for _, want := range []string{"kvrouter", "kvrouter-epp"} {
		if !built[want] {
			t.Errorf("Dockerfile does not build %s", want)
		}
	}
	o := decodeManifests(t)
	decode(t, "helm/kvrouter-epp", renderChart(t, "helm/kvrouter-epp", "kvr", nil), &o)
	n := 0
	for _, d := range o.deployments {
		for _, c := range d.Spec.Template.Spec.Containers {
			if len(c.Command) == 0 || c.Image == "" || !regexp.MustCompile(`^ghcr\.io/kvrouter/kvrouter:`).MatchString(c.Image) {
				continue
			}
			n++
			if !built[c.Command[0]] {
				t.Errorf("deployment %s runs %s, which the image does not ship", d.Name, c.Command[0])
			}
		}
	}
	if n == 0 {
		t.Error("no deployment runs a kvrouter image command")
	}
}
