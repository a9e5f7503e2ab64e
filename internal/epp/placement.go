package epp

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/kvrouter/kvrouter/internal/frontend"
	"github.com/kvrouter/kvrouter/internal/oai"
)

// Placement metadata: the gateway's own (trusted) placement of a request,
// set in Envoy's route configuration or by an earlier filter, in the
// request's filter metadata under NamespacePlacement. Clients' placement
// headers (frontend.HeaderPinWorker, ...) still need the admin key.
const (
	// NamespacePlacement is the filter metadata namespace read.
	NamespacePlacement = "kvrouter.placement"
	// KeyPinWorker pins the pick: "ID" or "ID:RANK".
	KeyPinWorker = "pin_worker"
	// KeyDPRanks bounds the data-parallel rank: "LO-HI" or "N".
	KeyDPRanks = "dp_ranks"
	// KeyLabels lists required worker labels: "k=v,k2=v2", or a struct of
	// string values.
	KeyLabels = "labels"
)

// placementOf reads the placement metadata of a request (nil when none).
// A malformed value is a 400: the pick must not silently ignore a rule.
func placementOf(md *corev3.Metadata) (*frontend.Placement, *oai.Error) {
	st := md.GetFilterMetadata()[NamespacePlacement]
	if st == nil {
		return nil, nil
	}
	f := st.GetFields()
	var labels map[string]string
	if lv, ok := f[KeyLabels]; ok {
		if s := lv.GetStructValue(); s != nil {
			labels = make(map[string]string, len(s.GetFields()))
			for k, v := range s.GetFields() {
				labels[k] = v.GetStringValue()
			}
		} else if v := lv.GetStringValue(); v != "" {
			l, err := frontend.ParseLabels(v)
			if err != nil {
				return nil, oai.BadRequest(NamespacePlacement+"."+KeyLabels, err.Error())
			}
			labels = l
		}
	}
	p, which, err := frontend.PlacementOf(f[KeyPinWorker].GetStringValue(), f[KeyDPRanks].GetStringValue(), labels)
	if err != nil {
		return nil, oai.BadRequest(NamespacePlacement+"."+which, err.Error())
	}
	return p, nil
}
