package sched

import (
	"sync"

	"github.com/bmckit/bmckit/storage"
)

// freshJobs keeps a copy of each job the Runner's Submit created (Created),
// at its create revision, until the job's first step on this runner: the
// step starts from it instead of reading the record back and decoding it: a
// Get and a decode less per job (on PostgreSQL, a round trip).
//
// A copy is only ever used at the revision it was created at. The scan
// forgets it at any later write of the job (a cancel, a spec edit, another
// replica running it, a delete; saw), and a step that used a copy gone
// stale meanwhile fails its first write, a compare-and-swap at that
// revision, before any BMC call; the job is then read back as without the
// copy. Jobs that another replica runs are forgotten at that replica's
// first write; the ones left when Run returns are dropped, and none is kept
// after it (an Engine runs once).
//
// Submit keeps a copy only if the scan has not read past the job's create
// revision yet: once it has, the job may be claimed, run and finished before
// Submit returns, and a copy kept then would never be taken nor forgotten.
type freshJobs struct {
	mu      sync.Mutex
	jobs    map[string]Copy
	scanned int64 // the highest revision the scan has read
	closed  bool
}

// put keeps c, a copy of job name just created at revision c.Rev.
func (f *freshJobs) put(name string, c Copy) {
	f.mu.Lock()
	if !f.closed && c.Rev > f.scanned {
		f.jobs[name] = c
	}
	f.mu.Unlock()
}

// saw takes in a batch of the scan's events (in revision order, keys under
// prefix): it notes how far the scan has read, and forgets the copy of every
// job written or deleted since its create, by any writer, this runner
// included. One lock per batch, not per event.
func (f *freshJobs) saw(prefix string, events []storage.Event) {
	if len(events) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scanned = max(f.scanned, events[len(events)-1].Revision)
	if len(f.jobs) == 0 {
		return
	}
	for _, ev := range events {
		name := ev.Key[len(prefix):]
		if c, ok := f.jobs[name]; ok && c.Rev != ev.Revision {
			delete(f.jobs, name)
		}
	}
}

// take returns and forgets the copy of job name, if there is one.
func (f *freshJobs) take(name string) (Copy, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.jobs[name]
	if ok {
		delete(f.jobs, name)
	}
	return c, ok
}

// close drops every copy and keeps no more: Run returned.
func (f *freshJobs) close() {
	f.mu.Lock()
	clear(f.jobs)
	f.closed = true
	f.mu.Unlock()
}
