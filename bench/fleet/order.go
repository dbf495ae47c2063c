package main

import (
	"fmt"
	"strings"
)

// orderResult is what checkOrder found.
type orderResult struct {
	systems, actions int
	// interleaved counts systems where a job's actions resumed after
	// another job's had begun; reordered, consecutive jobs that acted
	// against their submission order (create revisions); untagged, actions
	// whose ctx named no job.
	interleaved, reordered, untagged int
	examples                         []string
}

func (o orderResult) ok() bool { return o.interleaved == 0 && o.reordered == 0 && o.untagged == 0 }

func (o orderResult) String() string {
	s := fmt.Sprintf("Order and exclusivity (the state-changing calls that succeeded, per system, with the job each was sent for): %d calls on %d systems; a job's calls resumed after another job's began on the same system: %d; jobs that acted out of submission order: %d; calls for no job: %d.",
		o.actions, o.systems, o.interleaved, o.reordered, o.untagged)
	if len(o.examples) > 0 {
		s += " For example: " + strings.Join(o.examples, "; ") + "."
	}
	return s
}

// checkOrder checks, per system, that the jobs' state-changing calls came
// one job after the other (no job's calls resume once another job's began:
// one job at a time on a system) and in the jobs' submission order, their
// create revisions (docs/jobs.md, "Order").
func checkOrder(t *tracker, c *writeCounts) orderResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	var o orderResult
	example := func(format string, a ...any) {
		if len(o.examples) < 3 {
			o.examples = append(o.examples, fmt.Sprintf(format, a...))
		}
	}
	for sys, jobs := range t.actions {
		o.systems++
		o.actions += len(jobs)
		done := map[string]bool{}
		prev := ""
		for _, j := range jobs {
			switch {
			case j == "":
				o.untagged++
				continue
			case j == prev:
				continue
			case done[j]:
				o.interleaved++
				example("%s: %s acted again after %s", sys, j, prev)
			case prev != "" && c.createRev[j] < c.createRev[prev]:
				o.reordered++
				example("%s: %s (created at revision %d) after %s (revision %d)", sys, j, c.createRev[j], prev, c.createRev[prev])
			}
			done[prev] = prev != ""
			prev = j
		}
	}
	return o
}
