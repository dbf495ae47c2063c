package job

import "sync"

// freshJobs keeps a copy of each job Submit created, at its create revision,
// until the job's first step on this runner: the step starts from it instead
// of reading the record back and decoding it (a Get and a decode per job,
// about 4% of BenchmarkRunner's CPU).
//
// A copy is only ever used at the revision it was created at. The scan
// forgets it as soon as the job changes under another writer (a cancel, a
// spec edit, another replica running it) or is deleted or completed, and a
// step that used a copy gone stale meanwhile fails its first write, a
// compare-and-swap at that revision, before any BMC call; the job is then
// read back as without the copy. Jobs that another replica runs are
// forgotten at that replica's first write; the ones left when Start returns
// are dropped, and none is kept after it (a Runner starts once).
type freshJobs struct {
	mu     sync.Mutex
	jobs   map[string]freshJob
	closed bool
}

type freshJob struct {
	j   *Job
	rev int64
}

// put keeps a copy of j, just created at revision rev. The caller keeps j.
func (f *freshJobs) put(name string, j *Job, rev int64) {
	cp := new(Job)
	*cp = *j
	j.Spec.DeepCopyInto(&cp.Spec)
	j.Status.DeepCopyInto(&cp.Status)
	f.mu.Lock()
	if !f.closed {
		f.jobs[name] = freshJob{j: cp, rev: rev}
	}
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
