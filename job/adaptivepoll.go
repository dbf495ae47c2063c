package job

import (
	"slices"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// Adaptive polling of power changes.
//
// A BMC's power changes take about as long each time for one system and one
// action (a graceful shutdown of one OS, a POST of one firmware). Polling at
// PollInterval for the whole wait spends most of its requests on reads that
// cannot succeed yet. The Stepper therefore remembers, in memory, when the
// recent changes of each (system, action) landed, measured from the request,
// and polls sparsely before the earliest of them and densely across the
// window where they landed:
//
//   - learning: until MinSamples changes were seen (for the system, or
//     else for its endpoint: systems behind one BMC tend to behave alike),
//     polls follow the fixed schedule (PollInterval, SlowPollInterval after
//     SlowPollAfter);
//   - before the window: one sparse poll half-way to it, so a change that
//     came early this time is not missed for long (none when the window
//     starts within 4 dense intervals);
//   - the window: polls every DenseInterval from the window's start to its
//     end plus one DenseInterval (a change is seen within one DenseInterval
//     of landing: half of it on average);
//   - after it: the fixed schedule again, as for an unknown BMC.
//
// Each landing is estimated as the middle between the last read that did not
// show it and the first that did (or the time of the BMC's event, see
// [bmc.PowerWatcher]), and only from waits this Stepper followed from the
// request on. The window is the 10th to 90th percentile of the last 16
// estimates, so one odd change moves it little.

// AdaptivePoll configures adaptive polling of power tasks; the zero value
// turns it on with the defaults below.
type AdaptivePoll struct {
	// Disabled turns adaptive polling off: every power wait polls every
	// PollInterval (SlowPollInterval after SlowPollAfter). Defaults to false
	// (on): on a BMC whose changes take a predictable time it sends about
	// half the polls of a 1 s poller for a median detection lag near a
	// quarter second (docs/benchmarks.md); on others it learns a wide
	// window or none, and polls as without it.
	Disabled bool
	// DenseInterval is the delay between polls inside the learned window.
	// Defaults to 2*PollInterval (500ms): a change is seen a quarter second
	// after it landed, on average.
	DenseInterval time.Duration
	// MinSamples is how many changes of a (system, action) — or of any
	// system of the endpoint — must have been seen before the schedule
	// adapts. Defaults to 3.
	MinSamples int
	// MaxKeys bounds how many (system, action) and (endpoint, action)
	// histories are kept; beyond it an arbitrary one is forgotten. Defaults
	// to 100,000 (about 20 MB at most).
	MaxKeys int
}

const (
	pollHistory = 16 // landings kept per key
	pollLoQ     = 0.1
	pollHiQ     = 0.9
)

// landings is the recent history of one key: when changes landed, measured
// from the request.
type landings struct {
	d    [pollHistory]time.Duration
	n    int // samples stored (at most pollHistory)
	next int // ring position of the next sample
}

func (l *landings) add(d time.Duration) {
	l.d[l.next] = d
	l.next = (l.next + 1) % pollHistory
	if l.n < pollHistory {
		l.n++
	}
}

// window returns the 10th and 90th percentile of the stored landings.
func (l *landings) window() (lo, hi time.Duration) {
	s := slices.Clone(l.d[:l.n])
	slices.Sort(s)
	return s[int(pollLoQ*float64(len(s)-1))], s[int(pollHiQ*float64(len(s)-1)+0.999)]
}

// pollLearner keeps the landing histories of a Stepper and, per endpoint,
// whether the BMC's power events can be trusted (see powerwatch.go).
type pollLearner struct {
	cfg AdaptivePoll

	mu     sync.Mutex
	hist   map[string]*landings
	events map[string]*eventTrust // by endpoint key
}

// eventTrust is what an endpoint's event stream showed about itself.
type eventTrust struct {
	confirmed bool // a change came with an event
	misses    int  // consecutive changes seen while a watch was live, without an event
}

func newPollLearner(cfg AdaptivePoll) *pollLearner {
	return &pollLearner{cfg: cfg, hist: map[string]*landings{}, events: map[string]*eventTrust{}}
}

func systemPollKey(ep bmc.Endpoint, a bmc.PowerAction) string {
	return "s|" + ep.SystemKey() + "|" + string(a)
}

func endpointPollKey(ep bmc.Endpoint, a bmc.PowerAction) string {
	return "e|" + ep.Key() + "|" + string(a)
}

// observe records a change of action a on ep that landed d after its request.
func (p *pollLearner) observe(ep bmc.Endpoint, a bmc.PowerAction, d time.Duration) {
	if d < 0 {
		d = 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range []string{systemPollKey(ep, a), endpointPollKey(ep, a)} {
		h := p.hist[k]
		if h == nil {
			if len(p.hist) >= p.cfg.MaxKeys {
				for old := range p.hist { // forget an arbitrary one
					delete(p.hist, old)
					break
				}
			}
			h = &landings{}
			p.hist[k] = h
		}
		h.add(d)
	}
}

// window is the learned landing window of action a on ep: the system's, or
// else the endpoint's; ok is false while neither has MinSamples landings.
func (p *pollLearner) window(ep bmc.Endpoint, a bmc.PowerAction) (lo, hi time.Duration, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range []string{systemPollKey(ep, a), endpointPollKey(ep, a)} {
		if h := p.hist[k]; h != nil && h.n >= p.cfg.MinSamples {
			lo, hi = h.window()
			return lo, hi, true
		}
	}
	return 0, 0, false
}

// eventSeen records whether a change seen while a watch was live on the
// endpoint came with an event.
func (p *pollLearner) eventSeen(epKey string, came bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.events[epKey]
	if t == nil {
		if len(p.events) >= p.cfg.MaxKeys {
			clear(p.events)
		}
		t = &eventTrust{}
		p.events[epKey] = t
	}
	if came {
		t.confirmed, t.misses = true, 0
	} else {
		t.misses++
	}
}

// isTrusted says whether the endpoint's events may thin polling out: one
// change came with an event, and no two changes in a row came without one
// (one may: a poll can see a change a few milliseconds before its event).
func (p *pollLearner) isTrusted(epKey string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.events[epKey]
	return t != nil && t.confirmed && t.misses < 2
}

// adaptiveDelay is how long after elapsed (time since the request) the next
// poll is due, given the learned window [lo, hi] and the dense interval;
// ok is false once past the window (the caller polls on the fixed schedule).
// Every poll time is a point of a fixed grid (the sparse point lo/2, then
// lo + k*dense), so steps that run late do not shift the later polls.
func adaptiveDelay(elapsed, lo, hi, dense time.Duration) (time.Duration, bool) {
	// A poll due this close is merged with the one just made: a step that
	// ran a little early must not poll twice in a row.
	minGap := dense / 4
	if lo >= 4*dense {
		if sparse := lo / 2; elapsed+minGap < sparse {
			return sparse - elapsed, true
		}
	}
	end := hi + dense
	for t := lo; t <= end+dense/2; t += dense {
		if elapsed+minGap < t {
			return t - elapsed, true
		}
	}
	return 0, false
}
