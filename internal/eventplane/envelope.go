package eventplane

import (
	"errors"
	"fmt"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Format is the payload encoding of a stream message.
type Format uint8

const (
	// FormatMsgpack encodes RouterEvents in msgpack with the JSON field
	// names (the default: about half the bytes of JSON).
	FormatMsgpack Format = iota
	// FormatJSON encodes RouterEvents as Dynamo-compatible JSON.
	FormatJSON
)

func (f Format) String() string {
	if f == FormatJSON {
		return "json"
	}
	return "msgpack"
}

// ParseFormat parses "json" or "msgpack".
func ParseFormat(s string) (Format, error) {
	switch s {
	case "json":
		return FormatJSON, nil
	case "msgpack", "":
		return FormatMsgpack, nil
	}
	return 0, fmt.Errorf("eventplane: unknown format %q (want json or msgpack)", s)
}

// ErrEnvelope reports a stream message that is not a RouterEvent envelope.
var ErrEnvelope = errors.New("eventplane: malformed envelope")

// Envelope (the payload of one stream message), self-describing by its
// first byte so no header is needed:
//
//	JSON    '{'  one RouterEvent object, exactly Dynamo's event JSON
//	JSON    '['  a batch: an array of RouterEvent objects
//	msgpack map  one RouterEvent (same field names as JSON)
//	msgpack arr  a batch: an array of RouterEvent maps
//
// Events of one batch are applied in array order. Publishers put only one
// worker's events in a batch, in event_id order per rank.

// EncodeEnvelope appends the envelope of evs (one event: the single form;
// several: a batch) to dst.
func EncodeEnvelope(dst []byte, f Format, evs []kvevents.Event) ([]byte, error) {
	if len(evs) == 0 {
		return dst, fmt.Errorf("%w: empty batch", ErrEnvelope)
	}
	if f == FormatJSON {
		return encodeJSON(dst, evs)
	}
	return encodeMsgpack(dst, evs)
}

// DecodeEnvelope decodes a stream message payload, appending its events to
// dst.
func DecodeEnvelope(dst []kvevents.Event, payload []byte) ([]kvevents.Event, error) {
	if len(payload) == 0 {
		return dst, fmt.Errorf("%w: empty payload", ErrEnvelope)
	}
	switch c := payload[0]; {
	case c == '{' || c == '[' || c == ' ' || c == '\n' || c == '\t' || c == '\r':
		return decodeJSON(dst, payload)
	case c >= 0x80 && c <= 0x9f, c == 0xdc, c == 0xdd, c == 0xde, c == 0xdf:
		return decodeMsgpack(dst, payload)
	}
	return dst, fmt.Errorf("%w: leading byte 0x%02x", ErrEnvelope, payload[0])
}
