package replica

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/kvrouter/kvrouter/loads"
	"github.com/kvrouter/kvrouter/router"
)

// LoadView is one load as JSON.
type LoadView struct {
	PrefillTokens   int `json:"prefill_tokens"`
	DecodeBlocks    int `json:"decode_blocks"`
	Requests        int `json:"requests"`
	PrefillRequests int `json:"prefill_requests"`
}

func viewOf(l loads.Load) LoadView {
	return LoadView{PrefillTokens: l.PrefillTokens, DecodeBlocks: l.DecodeBlocks, Requests: l.Requests, PrefillRequests: l.PrefillRequests}
}

// OriginLoadView is one remote replica's part of a worker's load.
type OriginLoadView struct {
	Origin string `json:"origin"`
	LoadView
}

// WorkerLoadView is one worker+rank's load: the total the costs use, this
// replica's part and each remote replica's. A part's decode blocks count
// the blocks of that part's requests, so shared prompt blocks make the
// parts add up to more than the total (loads.WorkerLoad).
type WorkerLoadView struct {
	Worker uint64           `json:"worker"`
	Rank   uint32           `json:"dp_rank"`
	Total  LoadView         `json:"total"`
	Local  LoadView         `json:"local"`
	Remote []OriginLoadView `json:"remote"`
}

// PeerView is another replica heard through load sync.
type PeerView struct {
	Origin      string  `json:"origin"`
	LastSeenAgo float64 `json:"last_seen_seconds_ago"`
	Applied     uint64  `json:"bookings_applied"`
}

// LoadsView is the GET /debug/loads body: every busy worker+rank's load
// with its local and remote parts, and the peers.
type LoadsView struct {
	// Origin is this replica's load-sync id ("" with sync off).
	Origin  string           `json:"origin"`
	Sync    bool             `json:"sync"`
	Peers   []PeerView       `json:"peers"`
	Workers []WorkerLoadView `json:"workers"`
}

// Loads builds the view of rt's loads; ls is nil with sync off.
func Loads(rt *router.Router, ls *LoadSync, now time.Time) LoadsView {
	v := LoadsView{Peers: []PeerView{}, Workers: []WorkerLoadView{}}
	if ls != nil {
		v.Origin, v.Sync = ls.Origin(), true
		for _, p := range ls.Peers() {
			v.Peers = append(v.Peers, PeerView{Origin: p.Origin, LastSeenAgo: now.Sub(p.LastSeen).Seconds(), Applied: p.Applied})
		}
	}
	for _, wl := range rt.LoadBreakdown() {
		w := WorkerLoadView{Worker: wl.Worker.ID, Rank: wl.Worker.Rank, Total: viewOf(wl.Total), Local: viewOf(wl.Local),
			Remote: []OriginLoadView{}}
		for _, r := range wl.Remote {
			w.Remote = append(w.Remote, OriginLoadView{Origin: r.Origin, LoadView: viewOf(r.Load)})
		}
		v.Workers = append(v.Workers, w)
	}
	return v
}

// LoadsHandler serves Loads as JSON (GET /debug/loads; put it behind the
// admin keys like the other debug endpoints).
func LoadsHandler(rt *router.Router, ls *LoadSync) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(Loads(rt, ls, time.Now()))
	})
}
