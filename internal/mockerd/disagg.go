package mockerd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/mocker"
)

// Disaggregated prefill and decode (DESIGN.md §10) with vLLM's NIXL
// connector protocol (oai.KVTransferParams), so a router drives a mocker
// pool exactly as it drives vLLM's:
//
//   - A request whose kv_transfer_params say do_remote_decode is a prefill
//     hop: the engine holds its blocks when it finishes (mocker
//     Request.Hold) and the non-streamed answer carries kv_transfer_params
//     with do_remote_prefill, remote_block_ids (the held physical blocks),
//     remote_engine_id ("mocker-w<id>"), remote_request_id, and
//     remote_host/remote_port: where this mocker's HTTP API listens
//     (Config.AdvertiseURL).
//   - A request whose kv_transfer_params say do_remote_prefill is a decode
//     hop: the engine pulls len(remote_block_ids) leading blocks over its
//     KV link (mocker Request.RemoteBlocks, timed by Engine.KVTransfer),
//     caches them and announces them with Stored events, then decodes; its
//     usage reports them as cached_tokens. When the pull lands the mocker
//     tells the prefill mocker (POST /kv/release on remote_host:remote_port,
//     the mocker's stand-in for NIXL's notification) to free the blocks.
//     Its answer ends with the trailer oai.TrailerKVTransfer: how long it
//     waited for the pull (a kvrouter extension; vLLM sends no such thing).
//
// NB: the mocker moves no bytes; a prefill mocker that no longer holds the
// blocks (timed out) answers the release with 404, which is logged: the
// decode already cached them (vLLM would recompute instead).

// kvState is a request's part in disaggregation.
type kvState struct {
	hold   bool                  // prefill hop: blocks held at finish
	remote *oai.KVTransferParams // decode hop: where the blocks are
	blocks []int                 // the held blocks (set by the loop at finish)
}

// releaseRequest is the body of POST /kv/release.
type releaseRequest struct {
	RemoteRequestID string `json:"remote_request_id"`
}

// applyKV sets up st for its kv_transfer_params (nil: an ordinary request).
func applyKV(st *stream, p *oai.KVTransferParams) {
	switch {
	case p == nil:
	case p.DoRemoteDecode:
		st.req.Hold, st.kv.hold = true, true
	case p.DoRemotePrefill:
		st.req.RemoteBlocks, st.kv.remote = len(p.RemoteBlockIDs), p
	}
}

// finished records, on the loop, what a finished request's answer needs.
func (s *Server) finished(st *stream, id uint64) {
	if st.kv.hold {
		st.kv.blocks = s.eng.HeldBlocks(id)
	}
}

// transferParams are the kv_transfer_params of a prefill hop's answer (nil
// for other requests).
func (s *Server) transferParams(st *stream) *oai.KVTransferParams {
	if !st.kv.hold {
		return nil
	}
	engine := "mocker-w" + strconv.FormatUint(s.cfg.Engine.Worker.ID, 10)
	p := &oai.KVTransferParams{DoRemotePrefill: true, RemoteEngineID: &engine, RemoteBlockIDs: st.kv.blocks,
		RemoteRequestID: strconv.FormatUint(st.req.ID, 10), TPSize: 1}
	if p.RemoteBlockIDs == nil {
		p.RemoteBlockIDs = []int{}
	}
	if u, err := url.Parse(s.cfg.AdvertiseURL); err == nil && u.Host != "" {
		host, port, err := net.SplitHostPort(u.Host)
		if n, perr := strconv.Atoi(port); err == nil && perr == nil {
			p.RemoteHost, p.RemotePort = &host, &n
		}
	}
	return p
}

// reportTransfer sets, on a decode hop's answer, the trailer
// oai.TrailerKVTransfer with res.TransferTime (0 when no full block was
// pulled): the router splits the decode hop's time to first token into
// the transfer and the first decode pass with it. Set through
// http.TrailerPrefix, so that it needs no declaration before the headers
// of a stream already sent.
func reportTransfer(w http.ResponseWriter, st *stream, res *mocker.Result) {
	if st.kv.remote == nil {
		return
	}
	w.Header().Set(http.TrailerPrefix+oai.TrailerKVTransfer, strconv.FormatFloat(res.TransferTime.Seconds(), 'f', -1, 64))
}

// withKV adds p to a whole response of either endpoint.
func withKV(v any, p *oai.KVTransferParams) any {
	switch r := v.(type) {
	case oai.Completion:
		r.KVTransferParams = p
		return r
	case oai.ChatCompletion:
		r.KVTransferParams = p
		return r
	}
	return v
}

// handleRelease frees the blocks a prefill hop held (POST /kv/release).
func (s *Server) handleRelease(w http.ResponseWriter, r *http.Request) {
	body, e := readBody(w, r)
	if e != nil {
		e.Write(w)
		return
	}
	var req releaseRequest
	if err := json.Unmarshal(body, &req); err != nil {
		oai.BadRequest("", "invalid request body: "+err.Error()).Write(w)
		return
	}
	id, err := strconv.ParseUint(req.RemoteRequestID, 10, 64)
	if err != nil {
		oai.BadRequest("remote_request_id", "not a request id of this worker").Write(w)
		return
	}
	o := op{cancel: id, release: true, reply: make(chan error, 1)}
	select {
	case s.ops <- o:
	case <-r.Context().Done():
		return
	}
	select {
	case err = <-o.reply:
	case <-r.Context().Done():
		return
	}
	if err != nil {
		oai.Errorf(http.StatusNotFound, oai.TypeNotFound, err.Error()).Write(w)
		return
	}
	writeJSON(w, map[string]bool{"released": true})
}

// releaseOp runs a release on the loop.
func (s *Server) releaseOp(o op) {
	var err error
	if !s.eng.Release(o.cancel) {
		err = fmt.Errorf("mockerd: request %d holds no blocks here (released or timed out)", o.cancel)
	}
	s.snapshot()
	o.reply <- err
}

// expireHolds frees the holds past their timeout on an idle engine.
func (s *Server) expireHolds(now time.Duration) {
	if len(s.eng.ExpireHolds(now)) > 0 {
		s.snapshot()
	}
}

func (s *Server) snapshot() {
	st := s.eng.Stats()
	s.stats.Store(&st)
}

// notifyPulled tells each pulled request's prefill worker to release its
// blocks, off the loop.
func (s *Server) notifyPulled(ctx context.Context, ids []uint64, live map[uint64]*stream) {
	for _, id := range ids {
		st := live[id]
		if st == nil || st.kv.remote == nil {
			continue
		}
		p := st.kv.remote
		if p.RemoteHost == nil || p.RemotePort == nil || p.RemoteRequestID == "" {
			continue // not a mocker's prefill: nothing to tell
		}
		u := "http://" + net.JoinHostPort(*p.RemoteHost, strconv.Itoa(*p.RemotePort)) + "/kv/release"
		body, _ := json.Marshal(releaseRequest{RemoteRequestID: p.RemoteRequestID})
		s.releases.Add(1)
		go func() {
			defer s.releases.Done()
			s.postRelease(ctx, u, body)
		}()
	}
}

func (s *Server) postRelease(ctx context.Context, u string, body []byte) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: %s", u, resp.Status)
		}
	}
	if err != nil {
		s.releaseErr.Add(1)
		s.log.Warn("release remote KV blocks", "url", u, "err", err)
	}
}
