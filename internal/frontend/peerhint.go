package frontend

import (
	"net"
	"net/http"
	"strconv"

	"github.com/kvrouter/kvrouter/internal/frontend/pool"
	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/selector"
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
// when there is none or wk is not vLLM-style) and sets the hint header
// on hdr.
func (s *Server) withPeerHint(hdr http.Header, body []byte, wk *Worker, h *selector.PeerHint) []byte {
	ep := s.peerEndpoint(h)
	if ep == "" || h.Peer.ID == wk.ID {
		return body
	}
	hdr.Set(HeaderKVSource, ep)
	if wk.BootstrapPort != 0 {
		return body
	}
	host, port, err := net.SplitHostPort(ep)
	n, perr := strconv.Atoi(port)
	if err != nil || perr != nil {
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
		return body
	}
	return b
}
