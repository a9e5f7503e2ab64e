package zmqsub

import (
	"context"
	"log/slog"
	"testing"

	"github.com/go-zeromq/zmq4"
	"github.com/kvrouter/kvrouter/kvevents"
)

// FuzzMessage: a received message's frames (any count, any bytes) go
// through the bind path (frame split, topic, seq, worker resolution, hold,
// decode) without panicking; every message is counted, a malformed one
// as a decode error, and the sink sees only the resolved worker's events.
func FuzzMessage(f *testing.F) {
	vllm := []byte("\x92\xcbA\xd9\x00\x00\x00\x00\x00\x00\x91\x97\xabBlockStored\x91\x01\xc0\x94\x01\x02\x03\x04\x04\xc0\xa3GPU")
	f.Add([]byte("kv@10.0.0.7@m"), []byte{0, 0, 0, 0, 0, 0, 0, 1}, vllm, uint8(0))
	f.Add([]byte("kv@10.0.0.8@m"), []byte{0, 0, 0, 0, 0, 0, 0, 2}, vllm, uint8(0))
	f.Add([]byte("kv@@"), []byte{1, 2, 3}, []byte{0x90}, uint8(1))
	f.Add([]byte("x"), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, []byte{}, uint8(3))
	f.Fuzz(func(t *testing.T, topic, seq, payload []byte, extra uint8) {
		s := New(Config{BlockSize: 4, Binds: []string{"tcp://127.0.0.1:0"}, HoldMax: 4,
			Logger: slog.New(slog.DiscardHandler),
			Resolve: func(pod, _ string) (uint64, error) {
				if pod == "10.0.0.7" {
					return 7, nil
				}
				return 0, ErrUnknownPod
			}}, SinkFunc(func(ev *kvevents.Event) error {
			if ev.WorkerID != 7 {
				t.Fatalf("event of worker %d reached the sink", ev.WorkerID)
			}
			return nil
		}))
		frames := [][]byte{topic}
		for range extra % 4 {
			frames = append(frames, topic)
		}
		frames = append(frames, seq, payload)
		var hold []held
		for range 2 { // the second time, a held topic queues behind the first
			top, sq, pl, ok := s.frames(zmq4.NewMsgFrom(frames...), 0)
			if !ok {
				continue
			}
			if err := s.deliver(context.Background(), 0, top, sq, pl); err != nil {
				hold = s.holdMsg(hold, held{topic: top, seq: sq, payload: pl})
			}
		}
		st := s.Stats()
		if st.Messages != 2 {
			t.Fatalf("messages %d, want 2", st.Messages)
		}
		if len(seq) != 8 && st.DecodeError != 2 {
			t.Fatalf("a message without an 8-byte seq frame was not a decode error: %+v", st)
		}
		if n, _ := s.HoldStore().Size(); n != int64(len(hold)) {
			t.Fatalf("hold store %d entries, hold %d", n, len(hold))
		}
	})
}
