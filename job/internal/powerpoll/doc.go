// Package powerpoll is adaptive polling of power changes: the job
// package's Stepper learns when each system's power changes land and reads
// the state on a grid fitted to that window (job.AdaptivePoll configures it).
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
// Each landing is estimated by package powerwait, which follows each wait:
// from the reads around it (the middle between the last read that did not
// show it and the first that did, but at most D before the latter, and at
// most D/4 after a read-back), or as the time of the BMC's event, see
// [bmc.PowerWatcher]; and only from waits this Stepper followed from the
// request on.
//
// Why not more: a BMC whose every change takes a fresh random delay across
// a wide spread (uniform over 10 s, say) has no narrow window to learn; any
// schedule with a sub-second lag then needs reads across the whole spread,
// at least as many as a 1 s poller (docs/jobs.md has the arithmetic,
// docs/benchmarks.md the figures), and this one spends one every D there,
// half a 250 ms poller's.
package powerpoll
