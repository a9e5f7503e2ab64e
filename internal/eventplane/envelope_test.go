package eventplane_test

import (
	"errors"
	. "github.com/kvrouter/kvrouter/internal/eventplane"
	"reflect"
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/internal/eventplane/eventplanetest"
	"github.com/kvrouter/kvrouter/kvevents"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	g := eventplanetest.NewGen(1, 3, 2)
	for _, f := range []Format{FormatJSON, FormatMsgpack} {
		for _, n := range []int{1, 2, 15, 16, 70} {
			evs := make([]kvevents.Event, n)
			for i := range evs {
				evs[i] = g.Next()
			}
			b, err := EncodeEnvelope(nil, f, evs)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeEnvelope(nil, b)
			if err != nil {
				t.Fatalf("%s n=%d: %v", f, n, err)
			}
			if !reflect.DeepEqual(norm(got), norm(evs)) {
				t.Fatalf("%s n=%d: round trip differs:\n got %v\nwant %v", f, n, got, evs)
			}
		}
	}
}

// norm makes nil and empty slices compare equal.
func norm(evs []kvevents.Event) []kvevents.Event {
	out := append([]kvevents.Event(nil), evs...)
	for i := range out {
		if len(out[i].Blocks) == 0 {
			out[i].Blocks = nil
		}
		if len(out[i].Hashes) == 0 {
			out[i].Hashes = nil
		}
	}
	return out
}

// A single JSON event is exactly Dynamo's RouterEvent JSON.
func TestEnvelopeSingleJSONIsRouterEvent(t *testing.T) {
	ev := kvevents.Event{WorkerID: 3, EventID: 9, Kind: kvevents.KindStored, HasParent: true, Parent: 5,
		Blocks: []kvevents.Block{{Hash: 1, Local: 2}}}
	b, err := EncodeEnvelope(nil, FormatJSON, []kvevents.Event{ev})
	if err != nil {
		t.Fatal(err)
	}
	want := string(kvevents.AppendJSON(nil, &ev))
	if string(b) != want || !strings.Contains(want, `"data":{"stored":{"parent_hash":5`) {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var one kvevents.Event
	if err := kvevents.DecodeJSON(b, &one); err != nil {
		t.Fatal(err)
	}
}

func TestEnvelopeErrors(t *testing.T) {
	for _, p := range [][]byte{nil, []byte("x"), []byte("{"), []byte("[1]"), {0x81, 0xa1}} {
		if _, err := DecodeEnvelope(nil, p); !errors.Is(err, ErrEnvelope) {
			t.Errorf("%q: got %v, want ErrEnvelope", p, err)
		}
	}
	if _, err := EncodeEnvelope(nil, FormatJSON, nil); err == nil {
		t.Error("empty batch encoded")
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	g := eventplanetest.NewGen(2, 2, 1)
	for _, fm := range []Format{FormatJSON, FormatMsgpack} {
		evs := []kvevents.Event{g.Next(), g.Next()}
		b, _ := EncodeEnvelope(nil, fm, evs)
		f.Add(b)
		b, _ = EncodeEnvelope(nil, fm, evs[:1])
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, err := DecodeEnvelope(nil, data)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes and decodes to the same events.
		if len(evs) == 0 {
			return
		}
		for _, fm := range []Format{FormatJSON, FormatMsgpack} {
			b, err := EncodeEnvelope(nil, fm, evs)
			if err != nil {
				t.Fatal(err)
			}
			again, err := DecodeEnvelope(nil, b)
			if err != nil {
				t.Fatalf("re-decode %s: %v", fm, err)
			}
			if !reflect.DeepEqual(norm(again), norm(evs)) {
				t.Fatalf("%s: re-decode differs", fm)
			}
		}
	})
}
