package oai

import (
	"bytes"
	"encoding/json"
)

// ParseCacheSalt returns the body's cache_salt, vLLM's per-request prefix
// cache salt ("" when absent or null). As vLLM validates it, a salt that
// is given must be a non-empty string: anything else is a 400 *Error.
// Bodies that do not mention the key skip the second parse.
func ParseCacheSalt(body []byte) (string, error) {
	if !bytes.Contains(body, []byte(`"cache_salt"`)) {
		return "", nil
	}
	var v struct {
		Salt json.RawMessage `json:"cache_salt"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return "", BadRequest("", "invalid request body: "+err.Error())
	}
	if len(v.Salt) == 0 || string(v.Salt) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v.Salt, &s); err != nil || s == "" {
		return "", BadRequest("cache_salt", "Parameter 'cache_salt' must be a non-empty string if provided.")
	}
	return s, nil
}
