package job

import "time"

// AdaptivePoll configures adaptive polling of power tasks (the schedule and
// its rules: job/internal/powerpoll, docs/jobs.md); the zero value turns it
// on with the defaults below.
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
