// Package stagger limits power-on inrush: at most Limit power requests (on,
// cycle, reset) reach the BMCs of a group of systems (a rack, a PDU, a
// circuit) in any window of Interval, across runner restarts and across
// replicas sharing a storage.Store. docs/stagger.md states what the bound
// rests on (replicas' clocks, BMCs that act after they answer) and measures
// it.
//
// # Use
//
// The host says which group each system belongs to; a [Limiter] is the
// job.PowerGate that the job.Stepper asks before every power on, cycle and
// reset:
//
//	lim, err := stagger.New(stagger.Config{
//		Store:    store,                    // the Runner's store
//		Group:    rackOf,                   // SystemKey -> "rack-12"; "" = not limited
//		Limit:    10,
//		Interval: 5 * time.Second,
//	})
//	runner, err := job.NewRunner(job.Config{
//		Store:         store,
//		StepperConfig: job.StepperConfig{Dialer: d, PowerGate: lim},
//	})
//
// While the gate says to wait, the task waits without touching the BMC and
// asks again after the wait. The wait counts towards the task's timeout:
// with 1000 servers in one group at 10 per 5 s, the last one waits over
// 8 minutes, so raise the power task's Timeout (or DefaultTaskTimeout).
//
// # Semantics
//
// Each group has one record, KeyPrefix + "stagger/" + the path-escaped group,
// holding the admissions of the last Interval: system|job|task and when.
// [Limiter.Admit] is one [storage.Modify]: it drops admissions older than
// Interval, records the admission and returns 0 if fewer than Limit remain,
// and otherwise returns the time until the oldest one leaves the window.
// Asking again for a system, job and task already in the window (a resumed
// or retried step) returns 0 and takes no second slot, but moves its
// admission to now: the earlier one may never have been sent (a runner
// stopped between the admission and the request, a request failed and is
// retried), and the window must count the request when it is sent.
// Denials write nothing, so waiters do not contend with each other. A record
// holds at most Limit entries. Waiters are not queued: whoever asks first
// after a slot frees gets it.
//
// # Held slots
//
// Admit stamps a slot when it is granted, but the request goes out later
// (after a dial, a retry) and reaches the BMC later still. [Limiter.AdmitHeld],
// which the job.Stepper uses, stores the slot held open instead: it counts as
// made now until the caller releases it once the request's call has
// returned, and is then stamped with that time. The request is made under
// the ctx AdmitHeld returns, which carries a bmc.SendHook: drivers call
// bmc.Admit before every request, and from grant + Config.Hold on the slot
// refuses it (a transient error wrapping [ErrHoldExpired]); the ctx ends
// then too. A slot whose process died before releasing it counts until
// grant + Hold, then ages out from there. So every request's whole
// exchange, from grant to return, lies within its slot's time in the
// window.
//
// # Clocks
//
// Admissions are stamped with the admitting process's clock, and every
// process ages them by its own. Replicas' clocks must agree to well within
// Interval (run NTP). A replica whose clock is ahead by s ages others'
// admissions s early, so it may admit up to s early; one behind waits up to
// s longer. A stamp more than one Interval in the future is taken as made
// now (and stored so), so a clock set hours ahead holds its group back for
// one Interval, not hours.
//
// The job package's locks avoid comparing clocks altogether (a lease is
// taken over only after it was seen unchanged for a whole lease by the
// taker's own clock). That fits one lease that its holder keeps rewriting;
// it does not fit a sliding window, which needs each admission's age. A
// process can only bound an age from below by when it first saw the entry,
// so a restarted runner, or a replica that reads the group only when it has
// a power action to send, would count every admission as brand new and wait
// a full Interval behind entries that are nearly expired, every time. And
// the wait it must return would depend on what each process happened to
// observe. docs/stagger.md has the alternatives considered.
package stagger
