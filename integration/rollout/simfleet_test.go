// Package rollout_test proves the rollout package's promises where their
// effect happens: at the BMCs (issue 37). Redfish simulators (redfishtest,
// real HTTP over 127.0.0.1) log every request they receive; the tests
// measure, from those logs, how many servers were unavailable at once, when
// each one started, and how often each was updated.
package rollout_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/rollout"
	"github.com/bmckit/bmckit/storage/memstore"
)

const (
	simUser, simPassword   = "admin", "rollout-test-pw"
	fwComponent, fwVersion = "BIOS", "2.0.0"
)

// imageServer serves the firmware image the simulators fetch
// (SimpleUpdate); it returns the image's URI.
func imageServer() (*httptest.Server, string) {
	img := redfishtest.FirmwareImage(fwComponent, fwVersion)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/bios-"+fwVersion+".bin" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(img)))
		_, _ = w.Write(img)
	}))
	return srv, srv.URL + "/bios-" + fwVersion + ".bin"
}

// callTagger tags each request with the job, task and attempt that sent it
// (redfishtest.CallerHeader: "<job>/<task>/<attempt>").
type callTagger struct{ next http.RoundTripper }

func (c callTagger) RoundTrip(req *http.Request) (*http.Response, error) {
	if call, ok := job.CallFromContext(req.Context()); ok {
		req = req.Clone(req.Context())
		req.Header.Set(redfishtest.CallerHeader, fmt.Sprintf("%s/%d/%d", call.Job, call.Task, call.Attempt))
	}
	return c.next.RoundTrip(req)
}

// callerJob is the job named by a caller tag ("" when untagged).
func callerJob(tag string) string {
	i := strings.LastIndex(tag, "/")
	if i < 0 {
		return ""
	}
	j := strings.LastIndex(tag[:i], "/")
	if j < 0 {
		return ""
	}
	return tag[:j]
}

// logged is one request as a simulator received it.
type logged struct {
	At           time.Time
	Method, Path string
	Job          string // from the caller tag; "" when untagged
}

// stateChanging reports whether the request asks the BMC to change
// something: a firmware update's start, a reset, a PATCH of a system.
func (r logged) stateChanging() bool {
	switch r.Method {
	case http.MethodPost:
		return strings.HasSuffix(r.Path, "/UpdateService.SimpleUpdate") || strings.HasSuffix(r.Path, "/update-multipart") ||
			strings.HasSuffix(r.Path, "/Actions/ComputerSystem.Reset")
	case http.MethodPatch:
		return strings.HasPrefix(r.Path, "/redfish/v1/Systems/")
	}
	return false
}

// reqLog is one simulator's request log.
type reqLog struct {
	mu   sync.Mutex
	reqs []logged
}

func (l *reqLog) onRequest(r *http.Request) {
	e := logged{At: time.Now(), Method: r.Method, Path: r.URL.Path, Job: callerJob(r.Header.Get(redfishtest.CallerHeader))}
	l.mu.Lock()
	l.reqs = append(l.reqs, e)
	l.mu.Unlock()
}

func (l *reqLog) snapshot() []logged {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

// window is one server's unavailability as its BMC saw it: from its first
// state-changing request to the last request its job sent.
type window struct {
	server   int
	from, to time.Time
	starts   int // state-changing requests
	foreign  int // state-changing requests tagged with another job, or untagged
}

// windowOf reads server i's window from its log (ok false: the BMC saw no
// state-changing request). jobName is the server's job.
func windowOf(i int, reqs []logged, jobName string) (w window, ok bool) {
	w.server = i
	for _, r := range reqs {
		if r.stateChanging() {
			w.starts++
			if r.Job != jobName {
				w.foreign++
			}
			if w.from.IsZero() || r.At.Before(w.from) {
				w.from = r.At
			}
		}
	}
	if w.from.IsZero() {
		return w, false
	}
	for _, r := range reqs {
		if r.Job == jobName && r.At.After(w.to) {
			w.to = r.At
		}
	}
	if w.to.Before(w.from) {
		w.to = w.from
	}
	return w, true
}

// maxOverlap is the most windows open at one instant among those keep
// accepts (nil: all), and that instant. Windows that touch count as
// overlapping.
func maxOverlap(ws []window, keep func(server int) bool) (int, time.Time) {
	type edge struct {
		t     time.Time
		delta int
	}
	var es []edge
	for _, w := range ws {
		if keep != nil && !keep(w.server) {
			continue
		}
		es = append(es, edge{w.from, +1}, edge{w.to, -1})
	}
	sort.Slice(es, func(a, b int) bool {
		if es[a].t.Equal(es[b].t) {
			return es[a].delta > es[b].delta
		}
		return es[a].t.Before(es[b].t)
	})
	n, most := 0, 0
	var at time.Time
	for _, e := range es {
		n += e.delta
		if n > most {
			most, at = n, e.t
		}
	}
	return most, at
}

// systemReqs is one system's share of a multi-system BMC's log: the
// requests under its Systems/<id> resource, and those its job sent
// (sessions, the service root, the registries). Another job's request
// under the system's resource stays in, so windowOf counts it as foreign.
func systemReqs(reqs []logged, systemID, jobName string) []logged {
	prefix := "/redfish/v1/Systems/" + systemID
	var out []logged
	for _, r := range reqs {
		if r.Job == jobName || r.Path == prefix || strings.HasPrefix(r.Path, prefix+"/") {
			out = append(out, r)
		}
	}
	return out
}

// startInProcess runs a Runner (memstore, the simulators' credentials, short
// polls) and a rollout Controller over it in this process, the fleet tests'
// set-up; stop ends both and waits for them.
func startInProcess(t *testing.T) (ctx context.Context, r *job.Runner, ctl *rollout.Controller, tr *transitions, stop func()) {
	t.Helper()
	store := memstore.New()
	r, err := job.NewRunner(job.Config{
		Store: store,
		StepperConfig: job.StepperConfig{
			Dialer:       simDialer(),
			Credentials:  bmc.StaticCredentials{"sim": {Username: simUser, Password: simPassword}},
			PollInterval: 20 * time.Millisecond, SlowPollInterval: 40 * time.Millisecond,
		},
		ScanInterval: 50 * time.Millisecond, // EndpointConcurrency: the default, 32 per endpoint
	})
	if err != nil {
		t.Fatal(err)
	}
	tr = &transitions{}
	ctl, err = rollout.New(rollout.Config{Runner: r, Store: store, Observer: tr.observer(), PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = r.Start(ctx) }()
	go func() { defer wg.Done(); _ = ctl.Start(ctx) }()
	return ctx, r, ctl, tr, func() { cancel(); wg.Wait() }
}

// runFleetRollout creates rollout name with the fleet tests' policy
// (maxUnavailable fleetMaxUnav, at most groupMax per value of label, canary
// fleetCanary, failure budget fleetBudgetPct%) on spec's template and
// servers, waits up to 4 minutes for it to complete and returns its status.
func runFleetRollout(ctx context.Context, t *testing.T, ctl *rollout.Controller, name string, spec rollout.Spec, label string, groupMax int) rollout.Status {
	t.Helper()
	spec.Policy = rollout.Policy{
		MaxUnavailable:         rollout.Count(fleetMaxUnav),
		MaxUnavailablePerGroup: []rollout.GroupLimit{{Label: label, Max: rollout.Count(groupMax)}},
		Canary:                 fleetCanary,
		FailureBudget:          rollout.Percent(fleetBudgetPct),
	}
	if _, err := ctl.Create(ctx, name, spec); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 4*time.Minute)
	defer wcancel()
	ro, err := ctl.Wait(wctx, name)
	if err != nil {
		t.Fatalf("rollout did not complete: %v (counts %+v)", err, ro.Status.Counts)
	}
	return ro.Status
}
