package frontend

import (
	"math"
	"net"
	"net/http"
	"strconv"

	"github.com/kvrouter/kvrouter/internal/frontend/pool"
	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/selector"
	"github.com/prometheus/client_golang/prometheus"
)

// Peer-KV hints on the wire (router feature peer-kv-hints): a decision
// with a selector.PeerHint reaches its worker as
//
//   - the header HeaderKVSource, host:port of the peer's URL (llm-d's
//     name), on every engine;
//   - on vLLM-style workers (no SGLang bootstrap port), kv_transfer_params
//     in the shape of a decode hop's ({"do_remote_prefill": true,
//     remote_host/remote_port of the peer, remote_block_ids 0..Blocks-1:
//     the hinted leading block count, remote_engine_id "peer-w<ID>"}),
//     with no remote_request_id: the blocks belong to no request held for
//     this one, so the engine must not release anything on the peer.
//
// The client's own kv_transfer_params were stripped (guard.go) before
// any of this; the hint is the router's only. The mocker honours these
// params (it pulls the blocks it lacks over its KV link); a stock vLLM
// NIXL worker needs remote_request_id to locate the blocks, so for vLLM
// the hint is advisory until an engine-side connector reads it.

// Outcomes of kvrouter_peer_hints_total: what the frontend can see of a
// hint. sent and unsent are per request sent to a worker (a retry on
// another worker counts again); pulled is per answer whose engine
// reported a KV pull (oai.TrailerKVTransfer above zero: the mocker sends
// it, vLLM does not, so pulled stays 0 behind vLLM whatever it did).
const (
	peerSent   = "sent"   // header (and kv_transfer_params) attached
	peerUnsent = "unsent" // the decision had a hint, the request went without: peer left the pool, or the body could not carry it
	peerPulled = "pulled" // the hinted worker's answer reported pulling KV
)

// peerHintMetrics are kvrouter_peer_hints_total's three outcomes,
// resolved once (the label set is fixed).
type peerHintMetrics struct {
	vec                  *prometheus.CounterVec
	sent, unsent, pulled prometheus.Counter
}

func newPeerHintMetrics(reg *prometheus.Registry) *peerHintMetrics {
	m := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_peer_hints_total",
		Help: "Peer-KV hints (--enable-feature=peer-kv-hints) by outcome: sent (attached to a request sent to a worker), unsent (the decision had one, the request went without: peer gone or body not rewritable), pulled (the worker's answer reported a KV pull in the trailer X-Kvrouter-Kv-Transfer-Seconds: kvrouter mockers do, vLLM does not)."},
		[]string{"outcome"})
	reg.MustRegister(m)
	// Resolving the children exports them at 0 before the first hint.
	return &peerHintMetrics{vec: m, sent: m.WithLabelValues(peerSent),
		unsent: m.WithLabelValues(peerUnsent), pulled: m.WithLabelValues(peerPulled)}
}

// notePulled counts a hinted request's answer that reported a KV pull;
// call it once the body has been read to its end (trailers come after).
func (s *Server) notePulled(h *selector.PeerHint, resp *http.Response) {
	if h == nil || resp == nil || resp.Trailer == nil {
		return
	}
	v, err := strconv.ParseFloat(resp.Trailer.Get(oai.TrailerKVTransfer), 64)
	if err == nil && v > 0 && !math.IsInf(v, 0) {
		s.m.peerHints.pulled.Inc()
	}
}

// HeaderKVSource names the peer that holds the hinted prompt blocks
// (llm-d's p2p-source-producer header).
const HeaderKVSource = "X-Kv-Cache-Source-Host-Port"

// peerEndpoint is the host:port of the hinted peer, "" without a hint or
// when the peer has left the pool.
func (s *Server) peerEndpoint(h *selector.PeerHint) string {
	if h == nil || h.Blocks <= 0 {
		return ""
	}
	p, ok := s.pool.Get(h.Peer.ID)
	if !ok {
		return ""
	}
	return pool.HostPort(p.URL)
}

// withPeerHint returns body carrying j's hint for worker wk (body itself
// when there is none or wk is not vLLM-style), sets the hint header on
// hdr and counts the outcome.
func (s *Server) withPeerHint(hdr http.Header, body []byte, wk *Worker, h *selector.PeerHint) []byte {
	if h == nil || h.Blocks <= 0 || h.Peer.ID == wk.ID {
		return body
	}
	ep := s.peerEndpoint(h)
	host, port, err := net.SplitHostPort(ep)
	n, perr := strconv.Atoi(port)
	if ep == "" || err != nil || perr != nil {
		s.m.peerHints.unsent.Inc()
		return body
	}
	if wk.BootstrapPort != 0 {
		hdr.Set(HeaderKVSource, ep)
		s.m.peerHints.sent.Inc()
		return body
	}
	engine := "peer-w" + strconv.FormatUint(h.Peer.ID, 10)
	ids := make([]int, h.Blocks)
	for i := range ids {
		ids[i] = i
	}
	p := oai.KVTransferParams{DoRemotePrefill: true, RemoteEngineID: &engine, RemoteBlockIDs: ids,
		RemoteHost: &host, RemotePort: &n, TPSize: 1}
	b, err := oai.SetFields(body, map[string]any{"kv_transfer_params": p})
	if err != nil {
		s.log.Warn("peer hint not attached", "worker", wk.ID, "err", err)
		s.m.peerHints.unsent.Inc()
		return body
	}
	hdr.Set(HeaderKVSource, ep)
	s.m.peerHints.sent.Inc()
	return b
}
