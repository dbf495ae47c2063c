package redfishtest

import (
	"net/http"
	"time"
)

// CallerHeader is the request header whose value [StateChange.Caller]
// reports: a client (or a tracing http.RoundTripper around it) names who sent
// the request, e.g. "job/task/attempt".
const CallerHeader = "X-Bmckit-Call"

// StateChange is one accepted state-changing request: a ComputerSystem.Reset
// action, a boot override PATCH or a virtual media insert/eject. Requests the
// simulator refused (4xx, 5xx, injected faults) are not state changes.
type StateChange struct {
	// Seq numbers state changes in the order the server applied them,
	// from 1. Callbacks of concurrent requests may run in another order;
	// sort by Seq.
	Seq int64
	// Time is when the change was applied (Config.Clock).
	Time   time.Time
	Method string
	Path   string
	// System is the system's ID ("1", "2", ...); empty for virtual media
	// under the Manager.
	System string
	// What says what was asked: "reset:<ResetType>", "boot:<Target>/<Enabled>"
	// (e.g. "boot:Pxe/Once"), "media:insert <device> <image>" or
	// "media:eject <device>".
	What string
	// Note is "dropped" for a reset dropped during a pending power change and
	// "ignored" for a Once override the BMC ignores (both answered 204 but not
	// applied); empty otherwise. A request that found its effect already in
	// place (ForceOff on an Off system) is applied with no note.
	Note string
	// Caller is the request's X-Bmckit-Call header ([CallerHeader]), empty if
	// absent.
	Caller string
}

// stateChanged records the request's state change on its log entry. Called
// with s.mu held, right after the handler applied the change, so Seq follows
// the order of application; the fault middleware reports it to
// Config.OnStateChange once the handler returned.
func (s *Server) stateChanged(r *http.Request, system, what string) {
	e, ok := r.Context().Value(ctxKey{}).(*entry)
	if !ok || s.cfg.OnStateChange == nil {
		return
	}
	s.changeSeq++
	e.change = &StateChange{
		Seq: s.changeSeq, Time: s.now(), Method: r.Method, Path: r.URL.Path,
		System: system, What: what, Caller: r.Header.Get(CallerHeader),
	}
}

// reportStateChange calls Config.OnStateChange for the request's state
// change, if it made one. Called without s.mu, after the handler returned
// and before the answer is flushed to the client.
func (s *Server) reportStateChange(e *entry) {
	if e.change == nil {
		return
	}
	c := *e.change
	c.Note = e.req.Note
	s.cfg.OnStateChange(c)
}
