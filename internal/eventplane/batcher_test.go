package eventplane

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/kvrouter/kvrouter/kvevents"
)

// TestBatcher runs the scripts in testdata/batcher. There is no clock and
// no goroutine: times are offsets from an epoch given as t=, and every
// command prints what Ready returned (if it ran) and the whole state.
//
//	new max-batch=N max-inflight=N linger=DUR [assign-ids]
//	add w=W [rank=R] [id=FIRST] [n=N]   N events of worker W (ids FIRST..)
//	drained t=DUR                       the intake is momentarily empty
//	ready t=DUR                         send everything Ready returns
//	ack seq=S...  /  fail seq=S... t=DUR
//	flush                               prints the mark
//	flushed mark=M
//	last-id w=W [rank=R] id=ID          Resume's SetLastID
func TestBatcher(t *testing.T) {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	datadriven.Walk(t, "testdata/batcher", func(t *testing.T, path string) {
		var b *batcher
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			at := func() time.Time {
				var s string
				d.ScanArgs(t, "t", &s)
				dur, err := time.ParseDuration(s)
				if err != nil {
					d.Fatalf(t, "t=%s: %v", s, err)
				}
				return epoch.Add(dur)
			}
			intArg := func(key string, def int) int {
				if !d.HasArg(key) {
					return def
				}
				var v int
				d.ScanArgs(t, key, &v)
				return v
			}
			var out strings.Builder
			switch d.Cmd {
			case "new":
				cfg := PublisherConfig{MaxBatch: intArg("max-batch", 0), MaxInflight: intArg("max-inflight", 0),
					AssignIDs: d.HasArg("assign-ids")}
				if d.HasArg("linger") {
					var s string
					d.ScanArgs(t, "linger", &s)
					var err error
					if cfg.Linger, err = time.ParseDuration(s); err != nil {
						d.Fatalf(t, "linger: %v", err)
					}
				}
				cfg.setDefaults()
				b = newBatcher(&cfg)
			case "add":
				w, rank, id := intArg("w", 0), intArg("rank", 0), intArg("id", 0)
				for i := range intArg("n", 1) {
					ev := kvevents.Event{WorkerID: uint64(w), DPRank: uint32(rank), Kind: kvevents.KindCleared}
					if id > 0 {
						ev.EventID = uint64(id + i)
					}
					b.Add(ev)
				}
			case "drained":
				b.Drained(at())
			case "ready":
				now := at()
				for {
					m, ok := b.Ready(now)
					if !ok {
						break
					}
					if m.Events == nil {
						fmt.Fprintf(&out, "retry %d\n", m.Seq)
						continue
					}
					fmt.Fprintf(&out, "send %d: w%d %s\n", m.Seq, m.Worker, eventIDs(m.Events))
				}
			case "ack", "fail":
				var seqs []int
				d.ScanArgs(t, "seq", &seqs)
				for _, s := range seqs {
					if d.Cmd == "ack" {
						b.Acked(uint64(s))
					} else {
						b.Failed(uint64(s), at())
					}
				}
			case "flush":
				fmt.Fprintf(&out, "mark %d\n", b.Flush())
			case "flushed":
				fmt.Fprintf(&out, "flushed %t\n", b.Flushed(uint64(intArg("mark", 0))))
			case "last-id":
				b.SetLastID(kvevents.Worker{ID: uint64(intArg("w", 0)), Rank: uint32(intArg("rank", 0))}, uint64(intArg("id", 0)))
			default:
				d.Fatalf(t, "unknown command %s", d.Cmd)
			}
			out.WriteString(dumpBatcher(b, epoch))
			return out.String()
		})
	})
}

// eventIDs prints a batch as [rank:id ...] ("r1:5" for rank 1).
func eventIDs(evs []kvevents.Event) string {
	parts := make([]string, len(evs))
	for i := range evs {
		parts[i] = strconv.FormatUint(evs[i].EventID, 10)
		if evs[i].DPRank != 0 {
			parts[i] = "r" + strconv.FormatUint(uint64(evs[i].DPRank), 10) + ":" + parts[i]
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// dumpBatcher prints b's whole state, times as offsets from epoch.
func dumpBatcher(b *batcher, epoch time.Time) string {
	var s strings.Builder
	s.WriteString("pending:")
	for _, w := range b.order {
		fmt.Fprintf(&s, " w%d%s", w, eventIDs(b.batches[w]))
	}
	s.WriteString("\ndue:")
	for _, m := range b.due {
		fmt.Fprintf(&s, " w%d%s", m.Worker, eventIDs(m.Events))
	}
	first, end := b.Inflight()
	fmt.Fprintf(&s, "\ninflight [%d,%d):", first, end)
	for i, m := range b.inflight {
		fmt.Fprintf(&s, " %d:%dev", first+uint64(i), m.events)
		if m.acked {
			s.WriteString(",acked")
		}
		if m.failed > 0 {
			fmt.Fprintf(&s, ",failed%d", m.failed)
		}
		if !m.retryAt.IsZero() {
			fmt.Fprintf(&s, ",retry@%s", m.retryAt.Sub(epoch))
		}
	}
	s.WriteString("\n")
	if b.Lingering() {
		fmt.Fprintf(&s, "lingering until %s\n", b.lingerAt.Sub(epoch))
	}
	if d := b.Deadline(); !d.IsZero() {
		fmt.Fprintf(&s, "deadline %s\n", d.Sub(epoch))
	}
	if b.Blocked() {
		s.WriteString("blocked\n")
	}
	st := b.Stats()
	fmt.Fprintf(&s, "stats: events=%d messages=%d retries=%d\n", st.Events, st.Messages, st.Retries)
	return s.String()
}
