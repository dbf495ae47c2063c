package job

import "sync"

// freshJobs keeps a copy of each job Submit created, at its create revision,
// until the job's first step on this runner: the step starts from it instead
// of reading the record back and decoding it: a Get and a decode less per
// job (on PostgreSQL, a round trip).
//
// A copy is only ever used at the revision it was created at. The scan
// forgets it as soon as the job changes under another writer (a cancel, a
// spec edit, another replica running it) or is deleted or completed, and a
// step that used a copy gone stale meanwhile fails its first write, a
// compare-and-swap at that revision, before any BMC call; the job is then
// read back as without the copy. Jobs that another replica runs are
// forgotten at that replica's first write; the ones left when Start returns
// are dropped, and none is kept after it (a Runner starts once).
//
// Submit keeps a copy only if the scan has not read past the job's create
// revision yet: once it has, the job may be claimed, run and finished before
// Submit returns, and a copy kept then would never be taken nor forgotten.
type freshJobs struct {
	mu      sync.Mutex
	jobs    map[string]freshJob
	scanned int64 // the highest revision the scan has read
	closed  bool
}

type freshJob struct {
	j   *Job
	rev int64
}

// copyJob is a deep copy of j, for put: made before the job is created, so
// that put, right after, is quick and the scan rarely reads the create
// before it.
func copyJob(j *Job) *Job {
	cp := new(Job)
	*cp = *j
	j.Spec.DeepCopyInto(&cp.Spec)
	j.Status.DeepCopyInto(&cp.Status)
	return cp
}

// put keeps cp, a copy of job name (copyJob) just created at revision rev.
func (f *freshJobs) put(name string, cp *Job, rev int64) {
	f.mu.Lock()
	if !f.closed && rev > f.scanned {
		f.jobs[name] = freshJob{j: cp, rev: rev}
	}
	f.mu.Unlock()
}

// read notes that the scan has read the changes up to revision rev.
func (f *freshJobs) read(rev int64) {
	f.mu.Lock()
	f.scanned = max(f.scanned, rev)
	f.mu.Unlock()
}

// take returns and forgets the copy of job name, if there is one.
func (f *freshJobs) take(name string) (*Job, int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.jobs[name]
	if ok {
		delete(f.jobs, name)
	}
	return e.j, e.rev, ok
}

// changed forgets the copy of job name unless it is at revision rev: the
// scan saw the job at rev.
func (f *freshJobs) changed(name string, rev int64) {
	f.mu.Lock()
	if e, ok := f.jobs[name]; ok && e.rev != rev {
		delete(f.jobs, name)
	}
	f.mu.Unlock()
}

// forget drops the copy of job name.
func (f *freshJobs) forget(name string) {
	f.mu.Lock()
	delete(f.jobs, name)
	f.mu.Unlock()
}

// close drops every copy and keeps no more: Start returned.
func (f *freshJobs) close() {
	f.mu.Lock()
	clear(f.jobs)
	f.closed = true
	f.mu.Unlock()
}
