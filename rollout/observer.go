package rollout

import (
	"fmt"
	"time"

	"github.com/go-logr/logr"
)

// Event is one transition a pass wrote: a server's (Index >= 0: From and To
// set) or the rollout's (Index -1: Message says what: "started", "canary
// succeeded", "halting: ...", "completed: Halted", ...). It is reported once,
// by the process whose write made it, after the write.
type Event struct {
	Kind    EventKind
	Rollout string
	// Server and Index name the server; Index is -1 for the rollout's own.
	Server string
	Index  int
	From   State
	To     State
	// Message describes a rollout transition.
	Message string
	// Reason is a halting or completed rollout's reason (ReasonBudgetSpent,
	// ReasonCanaryFailed, ReasonAborted, ...), Result a completed one's
	// result.
	Reason string
	Result Result
	// Time is the pass's time.
	Time time.Time
}

// EventKind says what an Event reports.
type EventKind string

// Event kinds.
const (
	EventServer    EventKind = "Server"    // a server's state changed (From, To)
	EventStarted   EventKind = "Started"   // the rollout was created
	EventCanary    EventKind = "Canary"    // the canary ended (Result: Succeeded or Failed)
	EventHalting   EventKind = "Halting"   // no server starts any more (Reason)
	EventCompleted EventKind = "Completed" // the rollout ended (Result, Reason)
)

// Observer receives a rollout's events (contrib/prometheus turns them into
// metrics). Its functions must not block.
type Observer struct {
	Transition func(Event)
}

func (p *plan) event(i int, from, to State, msg string) {
	e := Event{Kind: EventServer, Rollout: p.name, Index: i, From: from, To: to, Message: msg, Time: p.now}
	if i >= 0 {
		e.Server = p.spec.Servers[i].Name
	}
	p.events = append(p.events, e)
}

// rolloutEvent reports a transition of the rollout itself.
func (p *plan) rolloutEvent(k EventKind, msg, reason string, res Result) {
	p.events = append(p.events, Event{Kind: k, Rollout: p.name, Index: -1, Message: msg, Reason: reason, Result: res, Time: p.now})
}

// emit reports events to o, recovering (and logging) an observer's panic.
func emit(log logr.Logger, o Observer, events []Event) {
	if o.Transition == nil {
		return
	}
	for _, e := range events {
		func() {
			defer func() {
				if p := recover(); p != nil {
					log.Error(fmt.Errorf("panic: %v", p), "rollout observer panicked; event dropped")
				}
			}()
			o.Transition(e)
		}()
	}
}
