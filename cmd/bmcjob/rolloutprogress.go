package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/bmckit/bmckit/rollout"
)

// rolloutPrinter prints a rollout's progress on e.stderr and, with -json,
// its events as JSON lines on e.stdout.
//
//   - On a terminal: one line, a progress bar with the count of servers in
//     each state, the failure budget left and the estimated time left,
//     redrawn in place (at most 5 times a second); rollout transitions and
//     failed servers are printed above it.
//   - Otherwise: plain lines, no escape codes: a status line when the
//     counts changed, at most one a second, and a line for every rollout
//     transition and every failed server at once.
//
// The Observer hands it events without blocking (observe queues them); its
// run loop prints.
type rolloutPrinter struct {
	e      *env
	name   string
	asJSON bool
	tty    bool
	width  int

	mu    sync.Mutex
	queue []rollout.Event
	lines []string
	wake  chan struct{}

	// Used by run alone.
	last     time.Time
	lastLine string
	barShown bool
}

func newRolloutPrinter(e *env, name string, asJSON bool) *rolloutPrinter {
	p := &rolloutPrinter{e: e, name: name, asJSON: asJSON, wake: make(chan struct{}, 1), width: 100}
	if f, ok := e.stderr.(*os.File); ok && isTerminal(f) {
		p.tty = true
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
			p.width = w
		}
	}
	return p
}

// observe is the rollout's Observer: it queues the event.
func (p *rolloutPrinter) observe(ev rollout.Event) {
	p.mu.Lock()
	p.queue = append(p.queue, ev)
	p.mu.Unlock()
	p.poke()
}

// line queues a message for standard error.
func (p *rolloutPrinter) line(s string) {
	p.mu.Lock()
	p.lines = append(p.lines, s)
	p.mu.Unlock()
	p.poke()
}

func (p *rolloutPrinter) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *rolloutPrinter) take() ([]rollout.Event, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	evs, lines := p.queue, p.lines
	p.queue, p.lines = nil, nil
	return evs, lines
}

// run prints until stop is closed, then prints what is left and the last
// status.
func (p *rolloutPrinter) run(ctl *rollout.Controller, stop <-chan struct{}) {
	// The store outlives the run; reads need no cancellation.
	ctx := context.Background()
	interval := time.Second
	if p.tty {
		interval = 200 * time.Millisecond
	}
	status := func() *rollout.Status {
		r, err := ctl.Get(ctx, p.name)
		if err != nil {
			return nil
		}
		return &r.Status
	}
	var timer <-chan time.Time
	dirty := true
	for {
		final := false
		select {
		case <-p.wake:
		case <-timer:
			timer = nil
		case <-stop:
			final = true
		}
		evs, lines := p.take()
		var st *rollout.Status
		var notes []string
		for _, ev := range evs {
			if p.asJSON {
				p.json(ev)
			}
			dirty = true
			switch {
			case ev.Index < 0:
				notes = append(notes, "rollout "+p.name+": "+ev.Message)
			case ev.To == rollout.StateFailed:
				if st == nil {
					st = status()
				}
				notes = append(notes, failedLine(ev.Server, st))
			}
		}
		for _, l := range append(lines, notes...) {
			p.printLine(l)
		}
		now := p.e.now()
		switch {
		case final:
			if st = status(); st != nil {
				p.status(st)
			}
			if p.tty && p.barShown {
				fmt.Fprintln(p.e.stderr)
			}
			return
		case dirty && timer == nil && now.Sub(p.last) >= interval:
			if st == nil {
				st = status()
			}
			if st != nil {
				p.status(st)
			}
			p.last, dirty = now, false
		case dirty && timer == nil:
			timer = p.e.after(p.last.Add(interval).Sub(now))
		}
	}
}

// printLine prints one message line (above the bar on a terminal).
func (p *rolloutPrinter) printLine(s string) {
	if p.tty {
		fmt.Fprint(p.e.stderr, "\r\x1b[K"+s+"\n")
		p.barShown = false
		return
	}
	fmt.Fprintf(p.e.stderr, "%s %s\n", p.e.now().Format("15:04:05"), s)
}

// status prints the status: the bar on a terminal, else a plain line when
// it changed.
func (p *rolloutPrinter) status(st *rollout.Status) {
	if p.tty {
		fmt.Fprint(p.e.stderr, "\r"+p.bar(st)+"\x1b[K")
		p.barShown = true
		return
	}
	l := "rollout " + p.name + ": " + countsLine(st)
	if l == p.lastLine {
		return
	}
	p.lastLine = l
	fmt.Fprintf(p.e.stderr, "%s %s\n", p.e.now().Format("15:04:05"), l)
}

// countsLine is the counts, the budget left and the estimate.
func countsLine(st *rollout.Status) string {
	c := st.Counts
	s := fmt.Sprintf("%d running, %d succeeded, %d failed, %d skipped, %d pending, %d held; failure budget left %d of %d",
		c.Running, c.Succeeded, c.Failed, c.Skipped, c.Pending, c.Held, max(st.FailureBudgetLeft, 0), st.FailureBudget)
	if st.Estimate != "" && !st.Completed() {
		s += "; ETA " + st.Estimate
	}
	return s
}

// bar is the terminal's progress line, fitted to its width.
func (p *rolloutPrinter) bar(st *rollout.Status) string {
	c := st.Counts
	total := len(st.States)
	done := c.Succeeded + c.Failed + c.Skipped
	text := fmt.Sprintf(" %d/%d  run %d  ok %d  fail %d  skip %d  pend %d  held %d  budget %d left",
		done, total, c.Running, c.Succeeded, c.Failed, c.Skipped, c.Pending, c.Held, max(st.FailureBudgetLeft, 0))
	if st.Estimate != "" && !st.Completed() {
		text += "  ETA " + st.Estimate
	}
	n := min(30, p.width-len(text)-3)
	if n < 5 {
		return clip(text, p.width-1)
	}
	filled := 0
	if total > 0 {
		filled = done * n / total
	}
	return "[" + strings.Repeat("#", filled) + strings.Repeat(".", n-filled) + "]" + text
}

// failedLine names a failed server and, from the status, why.
func failedLine(server string, st *rollout.Status) string {
	if st != nil {
		for _, f := range st.Failures {
			if f.Server == server {
				return fmt.Sprintf("%s failed (job %s): %s: %s", server, f.Job, f.Reason, f.Message)
			}
		}
	}
	return server + " failed"
}

// jsonLine is one line of -json output.
type jsonLine struct {
	// Type is "server" (a server's transition), "rollout" (the rollout's)
	// or "result" (the last line).
	Type    string          `json:"type"`
	Time    *time.Time      `json:"time,omitempty"`
	Rollout string          `json:"rollout"`
	Server  string          `json:"server,omitempty"`
	Index   *int            `json:"index,omitempty"`
	From    string          `json:"from,omitempty"`
	To      string          `json:"to,omitempty"`
	Message string          `json:"message,omitempty"`
	Result  rollout.Result  `json:"result,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	Status  *rollout.Status `json:"status,omitempty"`
}

func (p *rolloutPrinter) json(ev rollout.Event) {
	t := ev.Time
	l := jsonLine{Type: "rollout", Time: &t, Rollout: ev.Rollout, Message: ev.Message}
	if ev.Index >= 0 {
		i := ev.Index
		l.Type, l.Server, l.Index, l.From, l.To = "server", ev.Server, &i, ev.From.String(), ev.To.String()
	}
	writeJSONLine(p.e.stdout, l)
}

func writeJSONLine(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	_, _ = w.Write(append(b, '\n'))
}

// result prints the completed rollout's result on standard output and
// returns nil only when it Succeeded.
func (p *rolloutPrinter) result(r *rollout.Rollout) error {
	st := &r.Status
	if p.asJSON {
		writeJSONLine(p.e.stdout, jsonLine{Type: "result", Rollout: r.Name, Result: st.Result, Reason: st.Reason, Message: st.Message, Status: st})
	} else {
		out := p.e.stdout
		fmt.Fprintf(out, "rollout %s: %s (%s): %s\n", r.Name, st.Result, st.Reason, st.Message)
		c := st.Counts
		fmt.Fprintf(out, "  %d servers: %d succeeded, %d skipped, %d failed, %d not started\n", len(st.States), c.Succeeded, c.Skipped, c.Failed, c.Pending+c.Held)
		for _, f := range st.Failures {
			fmt.Fprintf(out, "  failed: %s (job %s): %s: %s\n", f.Server, f.Job, f.Reason, f.Message)
		}
		if more := c.Failed - len(st.Failures); more > 0 {
			fmt.Fprintf(out, "  ... and %d more failed servers\n", more)
		}
	}
	if st.Result != rollout.ResultSucceeded {
		return &resultError{fmt.Sprintf("rollout %s: %s (%s): %s", r.Name, st.Result, st.Reason, st.Message)}
	}
	return nil
}
