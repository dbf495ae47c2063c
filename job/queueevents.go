package job

import (
	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/job/observe"
)

// queueEvents reports a Runner loop's queue to the observer hook
// (Observer.Queue; the Stepper's events: observer.go), each change once.
type queueEvents struct {
	last *observe.QueueEvent // what Observer.Queue was last told
}

// report tells f (nil: nobody) the queue when it changed since the last
// report: jobs known, systems held, steps in flight. A stopped loop reports
// nothing held and no step in flight.
func (q *queueEvents) report(log logr.Logger, f func(observe.QueueEvent), jobs, held, steps int) {
	if f == nil {
		return
	}
	e := observe.QueueEvent{Jobs: jobs, Held: held, Waiting: max(jobs-held, 0), Steps: steps}
	if q.last != nil && *q.last == e {
		return
	}
	q.last = &e
	emit(log, f, e)
}
