package mocker_test

import (
	"fmt"
	"time"

	"github.com/kvrouter/kvrouter/mocker"
)

// A discrete-event loop: add requests when they arrive, run a pass, and
// start the next pass when the previous one ends.
func Example() {
	cfg := mocker.DefaultConfig()
	e := mocker.New(cfg)
	prompt := make([]uint32, 1000) // 15 full blocks of 64 tokens
	for i := range prompt {
		prompt[i] = uint32(i)
	}
	arrivals := []mocker.Request{
		{ID: 1, Tokens: prompt, MaxOutputTokens: 3},
		{ID: 2, Tokens: prompt, MaxOutputTokens: 2, Arrival: 40 * time.Millisecond},
	}
	now := time.Duration(0)
	for len(arrivals) > 0 || e.Busy() {
		for len(arrivals) > 0 && arrivals[0].Arrival <= now {
			_ = e.Add(arrivals[0])
			arrivals = arrivals[1:]
		}
		if !e.Busy() {
			now = arrivals[0].Arrival // idle until the next arrival
			continue
		}
		r := e.Step(now)
		for _, ev := range r.Events {
			fmt.Printf("event %d %s blocks=%d\n", ev.EventID, ev.Kind, ev.NumBlocks())
		}
		for _, f := range r.Finished {
			fmt.Printf("r%d done at %v: ttft=%v cached=%d computed=%d\n", f.ID, f.Finish.Round(time.Millisecond),
				f.TTFT.Round(time.Millisecond), f.CachedTokens, f.ComputedTokens)
		}
		now = r.End()
	}
	st := e.Stats()
	fmt.Printf("passes=%d inactive blocks=%d\n", st.Passes, st.InactiveBlocks)
	// Output:
	// event 0 stored blocks=15
	// r1 done at 44ms: ttft=32ms cached=0 computed=1000
	// r2 done at 67ms: ttft=21ms cached=960 computed=40
	// passes=5 inactive blocks=15
}
