package oai

import (
	"encoding/json"
	"fmt"
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
