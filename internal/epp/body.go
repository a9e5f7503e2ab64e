package epp

import (
	"bytes"
	"encoding/json"
)

// kvTransferKey is vLLM's disaggregation parameter (NIXL connector): a
// request carrying it makes the engine pull KV blocks from the remote
// host it names, or hold its blocks for a pull. Only the serving stack
// sets it.
const kvTransferKey = "kv_transfer_params"

// clientKVTransfer reports whether body, a request as the client sent
// it, sets kv_transfer_params at its top level to anything but null (the
// engines read a null as absent). The key may be spelled with JSON
// escapes, so a body that mentions neither the key nor an escape is the
// only one passed without a parse; a body that does not parse as a JSON
// object counts when the key appears in it at all (the engine's parser
// may accept what this one does not).
func clientKVTransfer(body []byte) bool {
	if !bytes.Contains(body, []byte(kvTransferKey)) && !bytes.Contains(body, []byte(`\u`)) {
		return false
	}
	var top map[string]present
	if err := json.Unmarshal(body, &top); err != nil {
		return bytes.Contains(body, []byte(kvTransferKey))
	}
	return bool(top[kvTransferKey])
}

// present decodes any JSON value as whether it is not null, without
// keeping it.
type present bool

func (p *present) UnmarshalJSON(b []byte) error {
	*p = present(string(b) != "null")
	return nil
}
