package rollout

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/timestamp"
)

// This file holds a pass's decisions as pure functions of the spec, the
// control, the status read and what the pass observed, so that every way of
// running a rollout (the Controller over a Store; a Kubernetes reconciler
// over an object's status) makes the same ones. A pass:
//
//  1. records the completions observed (finish),
//  2. decides whether the rollout halts (judge),
//  3. picks the servers that may start within every limit (pick), asking
//     the approval gate,
//  4. records what the skip check said of them (admit),
//  5. completes the rollout when nothing is left (judge again),
//
// and the caller writes the result by compare-and-swap before it creates a
// single job.

// Decision is one pass over a rollout whose record the host keeps: the
// Controller's Store record, or a Kubernetes object's status. Decide fills
// in the rest.
type Decision struct {
	Name    string
	Spec    *Spec
	Control Control
	Now     time.Time
	// Outcomes are the completed jobs of running servers, as the host read
	// them (a server not running any more is passed over).
	Outcomes []Outcome
	// Approve is the approval gate for server i (nil: every server
	// approved).
	Approve func(i int) bool
	// InState is the skip check for server i (nil: none): true skips it.
	// It is called for the picked servers at once, at most
	// CheckConcurrency (default 64) at a time.
	InState          func(ctx context.Context, i int) bool
	CheckConcurrency int

	groups *groups // the Controller's, compiled once per spec
}

// Decide makes one pass's decisions and changes st accordingly (a zero
// Status is a new rollout's): it records the outcomes, decides whether the
// rollout halts, picks the servers that may start within every limit,
// skips those in state, and completes the rollout when nothing is left. The
// host must store st by compare-and-swap against what it read; only once
// that write succeeded may it create the started servers' jobs (named by
// JobName) and report the events. A conflicting write is redone from a
// fresh read.
func Decide(ctx context.Context, d Decision, st *Status) (started []int, events []Event) {
	g := d.groups
	if g == nil {
		g = newGroups(d.Spec)
	}
	p := &plan{spec: d.Spec, groups: g, ctl: d.Control, st: st, now: d.Now, name: d.Name}
	p.init()
	p.finish(d.Outcomes)
	p.judge()
	picked := p.pick(d.Approve)
	started = p.admit(picked, checkAll(ctx, picked, d.InState, d.CheckConcurrency))
	p.judge()
	return started, p.events
}

// checkAll runs in for every picked server, conc at a time, and returns the
// verdicts as admit's skip.
func checkAll(ctx context.Context, picked []int, in func(context.Context, int) bool, conc int) func(int) bool {
	if in == nil || len(picked) == 0 {
		return nil
	}
	if conc <= 0 {
		conc = 64
	}
	skip := make([]bool, len(picked))
	var wg sync.WaitGroup
	sem := make(chan struct{}, conc)
	for k, i := range picked {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			skip[k] = in(ctx, i)
		}()
	}
	wg.Wait()
	pos := make(map[int]int, len(picked))
	for k, i := range picked {
		pos[i] = k
	}
	return func(i int) bool { return skip[pos[i]] }
}

// Outcome is a running server's completed job, as a pass read it.
type Outcome struct {
	Index     int
	Job       string
	Result    conditions.Result // Succeeded, Failed, Canceled
	Reason    string
	Message   string
	Completed time.Time
}

// plan is one pass over a rollout: its spec (immutable), the groups derived
// from it, and the status being decided.
type plan struct {
	spec   *Spec
	groups *groups
	ctl    Control
	st     *Status
	now    time.Time
	events []Event
	name   string
}

// init fills a new status: every server pending.
func (p *plan) init() {
	st := p.st
	if st.States != "" {
		return
	}
	st.States = strings.Repeat(string(StatePending), len(p.spec.Servers))
	st.FailureBudget = p.spec.Policy.FailureBudget.Of(len(p.spec.Servers))
	st.FailureBudgetLeft = st.FailureBudget
	st.Canary.Size = min(p.spec.Policy.Canary, len(p.spec.Servers))
	st.StartTime = timestamp.Ptr(p.now)
	conditions.MarkRunning(&st.Conditions, 1, "started", p.now)
	p.rolloutEvent(EventStarted, "started", "", "")
	st.count()
}

func (p *plan) set(i int, to State) {
	b := []byte(p.st.States)
	from := State(b[i])
	if from == to {
		return
	}
	b[i] = byte(to)
	p.st.States = string(b)
	p.event(i, from, to, "")
}

// finish records the completions observed.
func (p *plan) finish(outs []Outcome) {
	st := p.st
	for _, o := range outs {
		if st.State(o.Index) != StateRunning {
			continue // recorded by an earlier pass
		}
		to := StateSucceeded
		if o.Result != conditions.ResultSucceeded {
			to = StateFailed
		}
		p.set(o.Index, to)
		since := p.dropRunning(o.Index)
		if !since.IsZero() && !o.Completed.IsZero() && o.Completed.After(since) {
			st.JobSeconds += o.Completed.Sub(since).Seconds()
			st.JobsTimed++
		}
		canary := p.isCanary(o.Index)
		if to == StateFailed {
			if len(st.Failures) < MaxFailures {
				st.Failures = append(st.Failures, Failure{
					Server: p.spec.Servers[o.Index].Name, Job: o.Job, Reason: o.Reason, Message: truncate(o.Message, 300),
				})
			}
			if canary {
				st.Canary.Failed++
			}
		} else if canary {
			st.Canary.Succeeded++
		}
	}
	st.count()
}

// dropRunning removes server i from Running and returns when it started.
func (p *plan) dropRunning(i int) time.Time {
	rs := p.st.Running
	for k := range rs {
		if rs[k].Index == i {
			since := rs[k].Since.Time
			p.st.Running = append(rs[:k], rs[k+1:]...)
			return since
		}
	}
	return time.Time{}
}

func (p *plan) isCanary(i int) bool {
	for _, c := range p.st.Canary.Servers {
		if c == i {
			return true
		}
	}
	return false
}

// judge decides halts, the canary's result, completion and the progress
// conditions.
func (p *plan) judge() {
	st := p.st
	if st.Completed() {
		return
	}
	st.FailureBudgetLeft = st.FailureBudget - st.Counts.Failed
	c := &st.Canary
	if c.Result == "" && c.Size > 0 {
		switch {
		case c.Failed > 0:
			c.Result = ResultFailed
		case c.Succeeded >= c.Size || (st.Counts.Pending+st.Counts.Held == 0 && p.runningCanaries() == 0):
			c.Result = ResultSucceeded // all of it, or every other server was skipped
		}
		if c.Result != "" {
			p.rolloutEvent(EventCanary, "canary "+strings.ToLower(string(c.Result)), ReasonCanary, c.Result)
		}
	}
	if st.Halt == "" {
		switch {
		case c.Result == ResultFailed:
			p.halt(ReasonCanaryFailed, fmt.Sprintf("canary server %s failed", p.failedNames(1)))
		case st.FailureBudgetLeft < 0:
			p.halt(ReasonBudgetSpent, fmt.Sprintf("%d servers failed, the failure budget is %d: %s", st.Counts.Failed, st.FailureBudget, p.failedNames(5)))
		case p.ctl.Aborted:
			p.halt(ReasonAborted, "aborted")
		}
	}
	switch {
	case st.Halt != "" && st.Counts.Running == 0:
		res := ResultHalted
		if st.Halt == ReasonAborted {
			res = ResultAborted
		}
		p.complete(res, st.Halt, p.haltMessage())
	case st.Halt == "" && st.Counts.Pending+st.Counts.Held+st.Counts.Running == 0:
		if st.Counts.Failed == 0 {
			p.complete(ResultSucceeded, ReasonAllSucceeded, fmt.Sprintf("%d servers succeeded, %d skipped", st.Counts.Succeeded, st.Counts.Skipped))
		} else {
			p.complete(ResultFailed, ReasonFailedWithinBudget, fmt.Sprintf("%d servers failed (budget %d), %d succeeded, %d skipped: %s", st.Counts.Failed, st.FailureBudget, st.Counts.Succeeded, st.Counts.Skipped, p.failedNames(5)))
		}
	}
	if st.Completed() {
		st.Estimate = ""
		return
	}
	p.progress()
}

// haltMessage is the Message of a halted or aborted rollout.
func (p *plan) haltMessage() string {
	st := p.st
	msg := p.st.Message
	if msg == "" {
		msg = st.Halt
	}
	return fmt.Sprintf("%s; %d succeeded, %d failed, %d skipped, %d not started", msg, st.Counts.Succeeded, st.Counts.Failed, st.Counts.Skipped, st.Counts.Pending+st.Counts.Held)
}

func (p *plan) halt(reason, msg string) {
	p.st.Halt = reason
	p.st.Message = msg
	p.rolloutEvent(EventHalting, "halting: "+msg, reason, "")
}

func (p *plan) complete(res Result, reason, msg string) {
	st := p.st
	st.Result, st.Reason, st.Message = res, reason, msg
	st.CompletionTime = timestamp.Ptr(p.now)
	st.Estimate = ""
	conditions.MarkCompleted(&st.Conditions, 1, conditions.Result(res), reason, msg, p.now)
	conditions.Set(&st.Conditions, conditions.Condition{Type: TypePaused, Status: conditions.False, Reason: reason, Message: msg, ObservedGeneration: 1, LastTransitionTime: timestamp.New(p.now)})
	p.rolloutEvent(EventCompleted, "completed: "+string(res), reason, res)
}

// progress sets Running and Paused and the estimate.
func (p *plan) progress() {
	st := p.st
	msg, reason := "", ReasonRolling
	switch {
	case st.Halt != "":
		reason, msg = ReasonHalting, "halting ("+st.Halt+"): waiting for the running jobs"
		if st.Halt == ReasonAborted {
			reason = ReasonAborting
		}
	case p.ctl.Paused:
		reason, msg = ReasonPaused, "paused"
	case p.awaitingApproval():
		reason, msg = ReasonAwaitingApproval, "the canary succeeded; waiting for its approval"
	case st.Canary.Size > 0 && st.Canary.Result == "":
		reason, msg = ReasonCanary, fmt.Sprintf("canary: %d of %d succeeded", st.Canary.Succeeded, st.Canary.Size)
	default:
		msg = fmt.Sprintf("%d running, %d succeeded, %d failed, %d skipped, %d pending, %d held", st.Counts.Running, st.Counts.Succeeded, st.Counts.Failed, st.Counts.Skipped, st.Counts.Pending, st.Counts.Held)
	}
	conditions.Set(&st.Conditions, conditions.Condition{Type: conditions.TypeCompleted, Status: conditions.False, Reason: reason, Message: msg, ObservedGeneration: 1, LastTransitionTime: timestamp.New(p.now)})
	running := conditions.False
	if reason == ReasonRolling || reason == ReasonCanary || reason == ReasonHalting || reason == ReasonAborting || st.Counts.Running > 0 {
		running = conditions.True
	}
	conditions.Set(&st.Conditions, conditions.Condition{Type: conditions.TypeRunning, Status: running, Reason: reason, Message: msg, ObservedGeneration: 1, LastTransitionTime: timestamp.New(p.now)})
	paused := conditions.False
	if p.ctl.Paused && st.Halt == "" {
		paused = conditions.True
	}
	conditions.Set(&st.Conditions, conditions.Condition{Type: TypePaused, Status: paused, Reason: reason, Message: msg, ObservedGeneration: 1, LastTransitionTime: timestamp.New(p.now)})
	st.Estimate = ""
	if mean := st.MeanJobTime(); mean > 0 {
		left := st.Counts.Pending + st.Counts.Held + st.Counts.Running
		maxU := p.spec.Policy.maxUnavailable(len(p.spec.Servers))
		waves := (left + maxU - 1) / maxU
		st.Estimate = (time.Duration(waves) * mean).Round(time.Second).String()
	}
}

func (p *plan) runningCanaries() int {
	n := 0
	for _, i := range p.st.Canary.Servers {
		if p.st.State(i) == StateRunning {
			n++
		}
	}
	return n
}

func (p *plan) awaitingApproval() bool {
	return p.spec.Policy.CanaryApproval && p.st.Canary.Size > 0 && p.st.Canary.Result == ResultSucceeded && !p.ctl.CanaryApproved
}

// failedNames names up to n failed servers with their reasons.
func (p *plan) failedNames(n int) string {
	var b []string
	for _, f := range p.st.Failures {
		if len(b) == n {
			b = append(b, "...")
			break
		}
		s := f.Server
		if f.Reason != "" {
			s += " (" + f.Reason + ")"
		}
		b = append(b, s)
	}
	return strings.Join(b, ", ")
}

// room is how many servers may start now, before group limits: none while
// halted, paused or waiting for the canary's approval; during the canary
// only what the canary still needs.
func (p *plan) room() int {
	st := p.st
	if st.Completed() || st.Halt != "" || p.ctl.Paused || p.awaitingApproval() {
		return 0
	}
	r := p.spec.Policy.maxUnavailable(len(p.spec.Servers)) - st.Counts.Running
	if c := &st.Canary; c.Size > 0 && c.Result == "" {
		r = min(r, c.Size-c.Succeeded-p.runningCanaries())
	}
	return max(r, 0)
}

// pick returns the servers that may start now, in order, within every limit:
// pending and held servers, each asked of approve (held ones again); a
// refused one is marked held. approve may be nil (every server approved).
func (p *plan) pick(approve func(i int) bool) []int {
	room := p.room()
	if room == 0 {
		return nil
	}
	used := p.groups.running(p.st)
	var out []int
	for i := 0; i < len(p.st.States) && len(out) < room; i++ {
		s := p.st.State(i)
		if s != StatePending && s != StateHeld {
			continue
		}
		if !p.groups.fits(i, used) {
			continue
		}
		if approve != nil && !approve(i) {
			p.set(i, StateHeld)
			continue
		}
		if s == StateHeld {
			p.set(i, StatePending) // released; started or skipped below
		}
		p.groups.add(i, used)
		out = append(out, i)
	}
	p.st.count()
	return out
}

// admit records the picked servers: skipped (already in state) or running
// (their jobs are created after the write). It returns the started ones.
func (p *plan) admit(picked []int, skip func(i int) bool) []int {
	var started []int
	st := p.st
	for _, i := range picked {
		if skip != nil && skip(i) {
			p.set(i, StateSkipped)
			continue
		}
		p.set(i, StateRunning)
		st.Running = append(st.Running, RunningServer{Index: i, Since: timestamp.New(p.now)})
		if c := &st.Canary; c.Size > 0 && c.Result == "" {
			c.Servers = append(c.Servers, i)
		}
		started = append(started, i)
	}
	st.count()
	return started
}

// groups holds, per group limit, each server's group and each group's bound.
type groups struct {
	of    [][]int // per limit: server index -> group id
	bound [][]int // per limit: group id -> max running
}

func newGroups(s *Spec) *groups {
	g := &groups{}
	for _, gl := range s.Policy.MaxUnavailablePerGroup {
		ids := map[string]int{}
		var size []int
		of := make([]int, len(s.Servers))
		for i := range s.Servers {
			v, ok := s.Servers[i].Labels[gl.Label]
			if !ok {
				v = "\x00" // servers without the label: a group of their own
			}
			id, seen := ids[v]
			if !seen {
				id = len(size)
				ids[v] = id
				size = append(size, 0)
			}
			of[i] = id
			size[id]++
		}
		bound := make([]int, len(size))
		for id, n := range size {
			bound[id] = max(1, gl.Max.Of(n))
		}
		g.of, g.bound = append(g.of, of), append(g.bound, bound)
	}
	return g
}

// running counts the running servers per limit and group.
func (g *groups) running(st *Status) [][]int {
	used := make([][]int, len(g.of))
	for l := range g.of {
		used[l] = make([]int, len(g.bound[l]))
	}
	for i := 0; i < len(st.States); i++ {
		if State(st.States[i]) == StateRunning {
			g.add(i, used)
		}
	}
	return used
}

func (g *groups) fits(i int, used [][]int) bool {
	for l := range g.of {
		id := g.of[l][i]
		if used[l][id] >= g.bound[l][id] {
			return false
		}
	}
	return true
}

func (g *groups) add(i int, used [][]int) {
	for l := range g.of {
		used[l][g.of[l][i]]++
	}
}
