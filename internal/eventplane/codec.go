package eventplane

import (
	"fmt"

	"github.com/kvrouter/kvrouter/kvevents"
)

// The per-event codecs are kvevents' (hand-written, no reflection); this
// file only frames them as single events or arrays.

func encodeJSON(dst []byte, evs []kvevents.Event) ([]byte, error) {
	if len(evs) == 1 {
		return kvevents.AppendJSON(dst, &evs[0]), nil
	}
	dst = append(dst, '[')
	for i := range evs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = kvevents.AppendJSON(dst, &evs[i])
	}
	return append(dst, ']'), nil
}

func decodeJSON(dst []kvevents.Event, payload []byte) ([]kvevents.Event, error) {
	out, err := kvevents.DecodeJSONEvents(dst, payload)
	if err != nil {
		return dst, fmt.Errorf("%w: %w", ErrEnvelope, err)
	}
	return out, nil
}

func encodeMsgpack(dst []byte, evs []kvevents.Event) ([]byte, error) {
	if len(evs) == 1 {
		return kvevents.AppendMsgpack(dst, &evs[0]), nil
	}
	n := len(evs)
	switch {
	case n < 16:
		dst = append(dst, 0x90|byte(n))
	case n <= 0xffff:
		dst = append(dst, 0xdc, byte(n>>8), byte(n))
	default:
		dst = append(dst, 0xdd, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	for i := range evs {
		dst = kvevents.AppendMsgpack(dst, &evs[i])
	}
	return dst, nil
}

func decodeMsgpack(dst []kvevents.Event, payload []byte) ([]kvevents.Event, error) {
	out, err := kvevents.DecodeMsgpackEvents(dst, payload)
	if err != nil {
		return dst, fmt.Errorf("%w: %w", ErrEnvelope, err)
	}
	return out, nil
}
