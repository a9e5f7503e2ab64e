package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/nats-io/nats.go/jetstream"
)

// StreamReport reads the whole KV events stream and describes, per worker,
// how many events it holds, their id range and the first break in id order
// (a gap, or a retried message landing late), to tell a publish that never
// reached the stream from a router that did not apply what is there.
func StreamReport(ctx context.Context, js jetstream.JetStream, stream string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return fmt.Sprintf("stream %s: %v", stream, err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(">"))
	if err != nil {
		return fmt.Sprintf("stream %s: %v", stream, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "stream %s: %d messages, seq %d..%d, per subject %v\n", stream,
		info.State.Msgs, info.State.FirstSeq, info.State.LastSeq, info.State.Subjects)
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		fmt.Fprintf(&b, "consumer: %v\n", err)
		return b.String()
	}
	ids := map[uint64][]uint64{} // worker -> event ids in stream order
	for read := uint64(0); read < info.State.Msgs; {
		batch, err := cons.Fetch(500, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			fmt.Fprintf(&b, "fetch: %v\n", err)
			break
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			evs, err := eventplane.DecodeEnvelope(nil, msg.Data())
			if err != nil {
				fmt.Fprintf(&b, "message on %s: %v\n", msg.Subject(), err)
				continue
			}
			for _, ev := range evs {
				ids[ev.WorkerID] = append(ids[ev.WorkerID], ev.EventID)
			}
		}
		if n == 0 {
			break
		}
		read += uint64(n)
	}
	workers := make([]uint64, 0, len(ids))
	for w := range ids {
		workers = append(workers, w)
	}
	slices.Sort(workers)
	for _, w := range workers {
		l := ids[w]
		breaks, first := 0, ""
		for i := 1; i < len(l); i++ {
			if l[i] != l[i-1]+1 {
				breaks++
				if first == "" {
					first = fmt.Sprintf(", first %d then %d", l[i-1], l[i])
				}
			}
		}
		fmt.Fprintf(&b, "worker %d: %d events, ids %d..%d, %d breaks in order%s\n",
			w, len(l), slices.Min(l), slices.Max(l), breaks, first)
	}
	return b.String()
}
