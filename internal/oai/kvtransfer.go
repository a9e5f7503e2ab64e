package oai

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// KVTransferParams are vLLM's kv_transfer_params of disaggregated prefill
// with the NIXL connector (DESIGN.md §10), field names as vLLM's
// NixlConnector and its proxy (tests/v1/kv_connector/nixl_integration/
// toy_proxy_server.py) spell them. The proxy sends the prefill request
// with {"do_remote_decode": true, "do_remote_prefill": false, the remote_*
// fields null}, max_tokens 1 and stream false; the prefill worker answers
// with the parameters of its held blocks ({"do_remote_prefill": true,
// "do_remote_decode": false, "remote_block_ids", "remote_engine_id",
// "remote_request_id", "remote_host", "remote_port", "tp_size"}) at the
// top level of its response, and the proxy attaches them, unchanged, to
// the client's original request for the decode worker.
type KVTransferParams struct {
	DoRemoteDecode  bool    `json:"do_remote_decode"`
	DoRemotePrefill bool    `json:"do_remote_prefill"`
	RemoteEngineID  *string `json:"remote_engine_id"`
	RemoteBlockIDs  []int   `json:"remote_block_ids"`
	RemoteHost      *string `json:"remote_host"`
	RemotePort      *int    `json:"remote_port"`
	// RemoteRequestID names the request on the prefill worker (newer vLLM).
	RemoteRequestID string `json:"remote_request_id,omitempty"`
	TPSize          int    `json:"tp_size,omitempty"`
}

// TrailerKVTransfer is a kvrouter mocker extension, not vLLM's: the HTTP
// trailer in which a decode hop's answer (streamed or not) reports how
// long the engine waited for its KV pull, in seconds on the engine's
// clock. A trailer because the time is known only once the request
// finishes, and a relaying proxy reads it at the end of the body without
// buffering or rewriting the client-visible stream.
const TrailerKVTransfer = "X-Kvrouter-Kv-Transfer-Seconds"

// PrefillParams are the kv_transfer_params of a prefill request (the
// proxy's, verbatim).
var PrefillParams = json.RawMessage(`{"do_remote_decode":true,"do_remote_prefill":false,"remote_engine_id":null,"remote_block_ids":null,"remote_host":null,"remote_port":null}`)

// ParseKVTransferParams reads the kv_transfer_params of a request or
// response body; nil when absent or null.
func ParseKVTransferParams(body []byte) (*KVTransferParams, error) {
	var v struct {
		P *KVTransferParams `json:"kv_transfer_params"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("oai: kv_transfer_params: %w", err)
	}
	return v.P, nil
}

// RawKVTransferParams returns a response's kv_transfer_params unparsed
// (nil when absent or null), so a proxy forwards every field, including
// ones it does not know.
func RawKVTransferParams(body []byte) (json.RawMessage, error) {
	var v struct {
		P json.RawMessage `json:"kv_transfer_params"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("oai: kv_transfer_params: %w", err)
	}
	if len(v.P) == 0 || string(v.P) == "null" {
		return nil, nil
	}
	return v.P, nil
}

// EngineFields are the request fields by which engines arrange KV
// transfers among themselves: vLLM's kv_transfer_params (also read from
// vllm_xargs.kv_transfer_params: vLLM merges both into the request's
// extra_args) and SGLang's PD bootstrap_host, bootstrap_port and
// bootstrap_room. Only the router sets them toward engines: a client's
// would make an engine hold KV blocks the router does not count, or
// connect to a host the client names. Embedded in the parsed requests so
// that presence is found by the decode the request gets anyway, with
// encoding/json's key matching (escapes decoded, any letter case): a
// superset of the exact keys engines read.
type EngineFields struct {
	KVTransferParams json.RawMessage `json:"kv_transfer_params"`
	BootstrapHost    json.RawMessage `json:"bootstrap_host"`
	BootstrapPort    json.RawMessage `json:"bootstrap_port"`
	BootstrapRoom    json.RawMessage `json:"bootstrap_room"`
	VLLMXArgs        json.RawMessage `json:"vllm_xargs"`
}

// engineFieldNames are EngineFields' top-level keys that StripEngineFields
// removes (vllm_xargs is kept, less its kv_transfer_params).
var engineFieldNames = []string{"kv_transfer_params", "bootstrap_host", "bootstrap_port", "bootstrap_room"}

// Sent reports whether the request may carry an engine field (a
// vllm_xargs object is looked into by StripEngineFields).
func (e *EngineFields) Sent() bool {
	return len(e.KVTransferParams) > 0 || len(e.BootstrapHost) > 0 || len(e.BootstrapPort) > 0 ||
		len(e.BootstrapRoom) > 0 || len(e.VLLMXArgs) > 0
}

// StripEngineFields returns body without the engine fields (EngineFields):
// every top-level key equal to one of them in any letter case, and
// vllm_xargs' kv_transfer_params. removed names what was dropped (nil:
// body is returned unchanged). Other fields keep their values (as EditFields re-encodes them);
// duplicate keys collapse to the last, as engines read them.
func StripEngineFields(body []byte) (out []byte, removed []string, err error) {
	out, err = EditFields(body, func(m map[string]json.RawMessage) error {
		for k := range m {
			for _, f := range engineFieldNames {
				if strings.EqualFold(k, f) {
					delete(m, k)
					removed = append(removed, f)
				}
			}
			if !strings.EqualFold(k, "vllm_xargs") {
				continue
			}
			var x map[string]json.RawMessage
			if json.Unmarshal(m[k], &x) != nil {
				continue // not an object: the engine refuses it
			}
			n := len(x)
			for xk := range x {
				if strings.EqualFold(xk, "kv_transfer_params") {
					delete(x, xk)
				}
			}
			if len(x) == n {
				continue
			}
			b, err := json.Marshal(x)
			if err != nil {
				return fmt.Errorf("oai: rewrite vllm_xargs: %w", err)
			}
			m[k] = b
			removed = append(removed, "vllm_xargs.kv_transfer_params")
		}
		if len(removed) == 0 {
			return errNothingRemoved
		}
		slices.Sort(removed)
		return nil
	})
	if errors.Is(err, errNothingRemoved) {
		return body, nil, nil
	}
	return out, removed, err
}

var errNothingRemoved = errors.New("oai: no engine field")

// MaxKVTransferParams bounds the kv_transfer_params of a prefill answer
// that the router passes to a decode worker, in bytes: 512 KiB holds the
// block ids of a 1M-token prompt at block size 16.
const MaxKVTransferParams = 512 << 10

// maxEngineID bounds remote_engine_id and remote_request_id; maxHost
// bounds remote_host (a DNS name is at most 253 bytes).
const (
	maxEngineID = 256
	maxHost     = 255
)

// ErrPrefillAnswer is wrapped by DecodePrefillAnswer's errors.
var ErrPrefillAnswer = errors.New("oai: invalid prefill answer")

// DecodePrefillAnswer reads the kv_transfer_params of a prefill worker's
// answer (vLLM's NIXL connector) for the decode hop and checks them: an
// object of at most MaxKVTransferParams bytes with do_remote_prefill true,
// do_remote_decode not true (a decode worker told to hold its blocks
// would keep them for the engine's timeout), a non-empty
// remote_engine_id and a remote_block_ids list of block ids >= 0; the
// optional remote_host (a non-empty string), remote_port (1..65535),
// remote_request_id (a string) and tp_size (>= 0) with their types. A key
// that spells a known field in another letter case is refused (engines
// read keys exactly, Go case-insensitively: the two must not disagree).
// The result is the object re-encoded (unknown fields kept, duplicate
// keys collapsed to the last, as engines read them): what the router
// checked is what the decode worker reads.
func DecodePrefillAnswer(body []byte) (json.RawMessage, error) {
	var top struct {
		P json.RawMessage `json:"kv_transfer_params"`
	}
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPrefillAnswer, err)
	}
	if len(top.P) == 0 || string(top.P) == "null" {
		return nil, fmt.Errorf("%w: no kv_transfer_params (is its KV connector configured?)", ErrPrefillAnswer)
	}
	if len(top.P) > MaxKVTransferParams {
		return nil, fmt.Errorf("%w: kv_transfer_params of %d bytes, more than %d", ErrPrefillAnswer, len(top.P), MaxKVTransferParams)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(top.P, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%w: kv_transfer_params is not an object", ErrPrefillAnswer)
	}
	for k := range m {
		for _, f := range kvTransferKeys {
			if k != f && strings.EqualFold(k, f) {
				return nil, fmt.Errorf("%w: kv_transfer_params key %q spells %q in another case", ErrPrefillAnswer, k, f)
			}
		}
	}
	canon, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPrefillAnswer, err)
	}
	var p KVTransferParams
	if err := json.Unmarshal(canon, &p); err != nil {
		return nil, fmt.Errorf("%w: kv_transfer_params: %w", ErrPrefillAnswer, err)
	}
	var errs []error
	if !p.DoRemotePrefill {
		errs = append(errs, errors.New("do_remote_prefill is not true"))
	}
	if p.DoRemoteDecode {
		errs = append(errs, errors.New("do_remote_decode is true"))
	}
	if p.RemoteEngineID == nil || *p.RemoteEngineID == "" || len(*p.RemoteEngineID) > maxEngineID {
		errs = append(errs, fmt.Errorf("remote_engine_id missing, empty or longer than %d bytes", maxEngineID))
	}
	if p.RemoteBlockIDs == nil {
		errs = append(errs, errors.New("remote_block_ids missing"))
	} else if slices.ContainsFunc(p.RemoteBlockIDs, func(id int) bool { return id < 0 }) {
		errs = append(errs, errors.New("remote_block_ids has a negative id"))
	}
	if p.RemoteHost != nil && (*p.RemoteHost == "" || len(*p.RemoteHost) > maxHost) {
		errs = append(errs, fmt.Errorf("remote_host empty or longer than %d bytes", maxHost))
	}
	if p.RemotePort != nil && (*p.RemotePort < 1 || *p.RemotePort > 65535) {
		errs = append(errs, errors.New("remote_port out of 1..65535"))
	}
	if len(p.RemoteRequestID) > maxEngineID {
		errs = append(errs, fmt.Errorf("remote_request_id longer than %d bytes", maxEngineID))
	}
	if p.TPSize < 0 {
		errs = append(errs, errors.New("tp_size < 0"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPrefillAnswer, err)
	}
	return canon, nil
}

// kvTransferKeys are KVTransferParams' keys.
var kvTransferKeys = []string{"do_remote_decode", "do_remote_prefill", "remote_engine_id", "remote_block_ids",
	"remote_host", "remote_port", "remote_request_id", "tp_size"}
