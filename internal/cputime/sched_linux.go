package cputime

import (
	"fmt"
	"os"
	"time"
)

// Sched returns, summed over every thread of this process, the time spent
// on a CPU and the time spent runnable but waiting for one
// (/proc/self/task/*/schedstat, fields 1 and 2), and false if they could
// not be read. Across an interval, a wait that is large beside the CPU
// time means other processes held the CPUs: the process was starved, and
// latencies measured in that interval say more about the machine than
// about the code.
func Sched() (onCPU, waiting time.Duration, ok bool) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, 0, false
	}
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited meanwhile
		}
		var run, wait int64
		if _, err := fmt.Sscan(string(b), &run, &wait); err != nil {
			return 0, 0, false
		}
		onCPU += time.Duration(run)
		waiting += time.Duration(wait)
		ok = true
	}
	return onCPU, waiting, ok
}
