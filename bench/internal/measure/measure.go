// Package measure holds what several bench programs count the same way:
// the process's CPU time and the busiest one-second window of a set of
// timestamps.
package measure

import (
	"slices"
	"syscall"
	"time"
)

// CPUTime is this process's user plus system CPU time so far.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BusiestSecond is the most of times in any one-second window.
func BusiestSecond(times []time.Time) int {
	times = slices.Clone(times)
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	best, lo := 0, 0
	for hi := range times {
		for times[hi].Sub(times[lo]) >= time.Second {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}
