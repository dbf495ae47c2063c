package sched

import (
	"time"

	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/job/internal/health"
	"github.com/bmckit/bmckit/job/internal/locksweep"
	"github.com/bmckit/bmckit/job/internal/membership"
	"github.com/bmckit/bmckit/job/observe"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/syslock"
)

// Config configures an Engine: the Runner's settings (job.Config has each
// one's meaning), defaults applied.
type Config struct {
	Jobs  Jobs
	Store storage.Store
	// KeyPrefix is the Runner's: its jobs are under KeyPrefix+"jobs/", its
	// replicas' heartbeats under KeyPrefix+"runners/", and its lock table's
	// namespace is KeyPrefix (syslock.NewTable).
	KeyPrefix           string
	Owner               string
	LeaseDuration       time.Duration
	ScanInterval        time.Duration
	Workers             int
	EndpointConcurrency int
	Clock               clock.Clock
	Log                 logr.Logger
	// Health is told the loop's turns and the store's outcomes, for the
	// Runner's Healthz.
	Health *health.State
	// Queue and LeaseLost, when set, are told the queue's changes and the
	// leases lost (observe.Observer's hooks, wrapped by the job side so that
	// a panic does not unwind the loop).
	Queue     func(observe.QueueEvent)
	LeaseLost func(observe.LeaseEvent)
}

// Engine is one Runner's scheduling engine.
type Engine struct {
	cfg   Config
	jobs  Jobs
	log   logr.Logger
	locks *syslock.Table

	wake  chan struct{}
	wakes *jobWakes // jobs to step now (Wake)
	own   ownWrites

	fresh   freshJobs        // jobs Submit created, until their first step (freshjobs.go)
	members *membership.View // heartbeats and the share of systems (replicas.go)
	// sweep deletes the locks this runner's Owner left behind, beside the
	// loop, which tells it the systems it holds (job/internal/locksweep).
	sweep *locksweep.Sweeper

	// Used only by the scheduling goroutine.
	follower *storage.Follower
	queue    *queue
}

// New returns the engine cfg describes; Run runs it.
func New(cfg Config) *Engine {
	e := &Engine{
		cfg: cfg, jobs: cfg.Jobs, log: cfg.Log, locks: syslock.NewTable(cfg.Store, cfg.KeyPrefix, cfg.Clock),
		follower: storage.NewFollower(cfg.Store, cfg.KeyPrefix+"jobs/"), queue: newQueue(cfg.Jobs.Endpoint),
		wake: make(chan struct{}, 1), wakes: newJobWakes(), own: ownWrites{rev: map[string]int64{}},
		fresh: freshJobs{jobs: map[string]Copy{}},
	}
	e.members = membership.New(membership.Config{Store: cfg.Store, Prefix: cfg.KeyPrefix + "runners/", Owner: cfg.Owner,
		Lease: cfg.LeaseDuration, ScanInterval: cfg.ScanInterval, Clock: cfg.Clock, Log: e.log})
	e.sweep = locksweep.New(locksweep.Config{Store: cfg.Store, Locks: e.locks, Owner: cfg.Owner,
		Lease: cfg.LeaseDuration, Clock: cfg.Clock, Log: e.log, Unfinished: e.unfinished})
	// The scan skips the runner's own writes without reading them: a store
	// that can (storage.ValueSkipper) leaves their values out of the feed.
	prefix := len(cfg.KeyPrefix + "jobs/")
	e.follower.SkipValues(func(key string, rev int64) bool { return e.own.covers(key[prefix:], rev) })
	return e
}

// Poke makes the loop scan the store at once (a job was submitted or
// canceled through this Runner). It does not block.
func (e *Engine) Poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Wake makes job due now if this runner holds it (StepperConfig.Wake). It
// does not block.
func (e *Engine) Wake(job string) { e.wakes.add(job) }

// Created keeps c, a copy of job just created at revision c.Rev, for the
// job's first step (freshjobs.go).
func (e *Engine) Created(job string, c Copy) { e.fresh.put(job, c) }

// Wrote notes that this runner wrote job at revision rev: the scan skips
// that change without decoding it.
func (e *Engine) Wrote(job string, rev int64) { e.own.note(job, rev) }
