package powerpoll

import (
	"slices"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

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

// Learner keeps the landing histories of a Stepper and, per endpoint,
// whether the BMC's power events can be trusted (the job package's powerwatch.go).
type Learner struct {
	minSamples, maxKeys int

	mu     sync.Mutex
	hist   map[string]*landings
	events map[string]*eventTrust // by endpoint key
}

// eventTrust is what an endpoint's event stream showed about itself.
type eventTrust struct {
	confirmed bool // a change came with an event
	misses    int  // consecutive changes seen while a watch was live, without an event
}

// New returns a learner that adapts once a (system, action) or (endpoint,
// action) has minSamples landings and keeps at most maxKeys histories.
func New(minSamples, maxKeys int) *Learner {
	return &Learner{minSamples: minSamples, maxKeys: maxKeys, hist: map[string]*landings{}, events: map[string]*eventTrust{}}
}

func systemKey(ep bmc.Endpoint, a bmc.PowerAction) string {
	return "s|" + ep.SystemKey() + "|" + string(a)
}

func endpointKey(ep bmc.Endpoint, a bmc.PowerAction) string {
	return "e|" + ep.Key() + "|" + string(a)
}

// Observe records a change of action a on ep that landed d after its request.
func (p *Learner) Observe(ep bmc.Endpoint, a bmc.PowerAction, d time.Duration) {
	if d < 0 {
		d = 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range []string{systemKey(ep, a), endpointKey(ep, a)} {
		h := p.hist[k]
		if h == nil {
			if len(p.hist) >= p.maxKeys {
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

// Window is the learned landing window of action a on ep: the system's, or
// else the endpoint's; ok is false while neither has MinSamples landings.
func (p *Learner) Window(ep bmc.Endpoint, a bmc.PowerAction) (lo, hi time.Duration, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range []string{systemKey(ep, a), endpointKey(ep, a)} {
		if h := p.hist[k]; h != nil && h.n >= p.minSamples {
			lo, hi = h.window()
			return lo, hi, true
		}
	}
	return 0, 0, false
}

// EventSeen records whether a change seen while a watch was live on the
// endpoint came with an event.
func (p *Learner) EventSeen(epKey string, came bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.events[epKey]
	if t == nil {
		if len(p.events) >= p.maxKeys {
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

// Trusted says whether the endpoint's events may thin polling out: one
// change came with an event, and no two changes in a row came without one
// (one may: a poll can see a change a few milliseconds before its event).
func (p *Learner) Trusted(epKey string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.events[epKey]
	return t != nil && t.confirmed && t.misses < 2
}

// Delay is how long after elapsed (time since the action was sent)
// the next poll is due, given the learned window [lo, hi], the dense
// interval and the largest gap (see the rules above). Every poll time is a
// point of a grid fixed by the window, so steps that run late do not shift
// the later polls.
func Delay(elapsed, lo, hi, dense, maxGap time.Duration) time.Duration {
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
