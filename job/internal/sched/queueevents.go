package sched

import "github.com/bmckit/bmckit/job/observe"

// queueEvents reports the loop's queue to the observer hook (Config.Queue:
// Observer.Queue; the Stepper's events are job/observer.go's), each change
// once.
type queueEvents struct {
	last *observe.QueueEvent // what Observer.Queue was last told
}

// report tells f (nil: nobody) the queue when it changed since the last
// report: jobs known, systems held, steps in flight. A stopped loop reports
// nothing held and no step in flight.
func (q *queueEvents) report(f func(observe.QueueEvent), jobs, held, steps int) {
	if f == nil {
		return
	}
	e := observe.QueueEvent{Jobs: jobs, Held: held, Waiting: max(jobs-held, 0), Steps: steps}
	if q.last != nil && *q.last == e {
		return
	}
	q.last = &e
	f(e)
}
