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
// recent changes of each (system, action) landed, measured from the moment
// the action was sent (when the BMC answered it, so that time spent queued
// behind the endpoint's request budget does not count), and reads the state
// on a grid fitted to that window [lo, hi] (lo: the 5th percentile of the
// last 16 landings, hi: the 95th). The rules, with D = DenseInterval and
// G = MaxGap:
//
//   - learning: until MinSamples changes were seen (for the system, or
//     else for its endpoint: systems behind one BMC tend to behave alike),
//     polls follow the fixed schedule (PollInterval, SlowPollInterval after
//     SlowPollAfter);
//   - the window: reads at hi, hi-D, hi-2D, ... down to the first one that
//     covers lo (the window is read from its end, so a window narrower than
//     D costs one read, at its 95th percentile);
//   - before the window: as few reads as keep every gap within G, evenly
//     spaced between the sending and the window's first read (a change
//     that came early is seen within G, not at the window);
//   - after it: at hi + D/2 (what lands just past the window is seen and
//     learned sooner), then every D, until SlowPollAfter (then the fixed
//     schedule).
//
// So while a change is awaited, the gap between two reads is at most G,
// and at most D from the window's first read on. A change that lands in or
// after the window is seen within D of landing; one that lands before it,
// within G. Every read time is a point of a grid fixed by the window.
//
// Each landing is estimated as the middle between the last read that did not
// show it and the first that did, but at most D before the latter (after a
// sparse stretch the change most likely landed late in it: a window that
// is too late moves earlier by up to D per change rather than jumping) and
// at most D/4 when the read before was the read-back (the schedule put no
// read between the two, so the interval says nothing of when the change
// came; the window of a BMC that got faster still moves earlier, slowly);
// or as the time of the BMC's event, see [bmc.PowerWatcher]; and only from
// waits this Stepper followed from the request on.
//
// Why not more: a BMC whose every change takes a fresh random delay across
// a wide spread (uniform over 10 s, say) has no narrow window to learn; any
// schedule with a sub-second lag then needs reads across the whole spread,
// at least as many as a 1 s poller (docs/jobs.md has the arithmetic,
// docs/benchmarks.md the figures), and this one spends one every D there,
// half a 250 ms poller's.

// AdaptivePoll configures adaptive polling of power tasks; the zero value
// turns it on with the defaults below.
type AdaptivePoll struct {
	// Disabled turns adaptive polling off: every power wait polls every
	// PollInterval (SlowPollInterval after SlowPollAfter). Defaults to false
	// (on): on a BMC whose changes take a predictable time it sends at most
	// about half the polls of a 1 s poller for a median detection lag under
	// 0.3 s (docs/benchmarks.md); on one whose delays spread widely it reads
	// every DenseInterval across the spread.
	Disabled bool
	// DenseInterval is the delay between polls inside the learned window
	// and after it. Defaults to 2*PollInterval (500ms): a change is seen a
	// quarter second after it landed, on average.
	DenseInterval time.Duration
	// MaxGap bounds the gap between two reads of a change that is awaited
	// on the learned schedule (until SlowPollAfter): before the window,
	// reads are this far apart. Defaults to 10*PollInterval (2.5s), at least
	// DenseInterval: a BMC whose changes take about 2 s is then read once,
	// at the end of its window.
	MaxGap time.Duration
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
	pollLoQ     = 0.05
	pollHiQ     = 0.95
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

// window returns the 5th and 95th percentile of the stored landings.
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

// adaptiveDelay is how long after elapsed (time since the action was sent)
// the next poll is due, given the learned window [lo, hi], the dense
// interval and the largest gap (see the rules above). Every poll time is a
// point of a grid fixed by the window, so steps that run late do not shift
// the later polls.
func adaptiveDelay(elapsed, lo, hi, dense, maxGap time.Duration) time.Duration {
	// A poll due this close is merged with the one just made: a step that
	// ran a little early must not poll twice in a row.
	minGap := dense / 4
	// The window's reads, from its end down: the lowest one covers lo (a
	// read at t sees what landed in (t-dense, t] within dense).
	first := hi
	for first-dense > lo {
		first -= dense
	}
	if elapsed+minGap < first {
		// Before the window: n reads evenly spaced between the sending
		// (0) and first, as few as keep every gap within maxGap.
		n := (first - 1) / maxGap // ceil(first/maxGap) - 1
		for j := time.Duration(1); j <= n; j++ {
			if t := first * j / (n + 1); elapsed+minGap < t {
				return t - elapsed
			}
		}
		return first - elapsed
	}
	// In the window: points first + k*dense up to hi.
	if elapsed+minGap < hi {
		k := (elapsed+minGap-first)/dense + 1
		return first + k*dense - elapsed
	}
	// After it: hi + dense/2, then every dense. The first read after the
	// window comes sooner: what lands just past the window's end is seen
	// sooner, and learned closer to where it landed.
	after := hi + dense/2
	if elapsed+minGap < after {
		return after - elapsed
	}
	k := (elapsed+minGap-after)/dense + 1
	return after + k*dense - elapsed
}
