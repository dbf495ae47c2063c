package sched

import (
	"context"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// Jobs is what the engine needs of the jobs it schedules; package job's
// Runner implements it. The engine never sees a job's type: it keeps the
// copy a step left (Copy) and hands it to the next step as it is. The
// engine calls these methods from its loop and from its workers, so they
// must be safe for concurrent use.
type Jobs interface {
	// Head decodes the part of a stored job record the engine schedules
	// by. An error means the record is undecodable: the job cannot run.
	Head(data []byte) (Head, error)
	// Endpoint parses a job's BMC address (Head.BMC).
	Endpoint(bmcURL string) (bmc.Endpoint, error)
	// Step runs one step of job, which holds system sys, under ctx: ctx
	// carries the lease's fence (bmc.WithFence), which admits every BMC
	// request, and ends when the lease's validity does. c is the job as the
	// previous step left it, or as it was created; the zero Copy means
	// none: the step loads the job.
	Step(ctx context.Context, job, sys string, c Copy) Outcome
	// CompleteWithoutBMC completes job if it needs no BMC (canceled before
	// it started, or with an invalid BMC address) without its system's
	// lock; it does nothing to any other job. A failure is retried at a
	// later scan.
	CompleteWithoutBMC(ctx context.Context, job string)
	// Signal wakes whoever waits for job: the engine saw it completed or
	// deleted, or stopped running it.
	Signal(job string)
	// Release closes job's BMC connection (to bmcURL), under ctx's fence.
	Release(ctx context.Context, job, bmcURL string) error
	// Close closes every BMC connection: the engine stopped.
	Close(ctx context.Context) error
}

// Head is the part of a stored job the engine schedules by.
type Head struct {
	BMC             string // the job's BMC address
	Started         bool   // a started job is resumed before any other on its system
	CancelRequested bool
	Completed       bool
}

// Copy is a job as the job side last loaded or wrote it, which the engine
// keeps between the job's steps so that a step need not read the record
// back: Job is the job side's value, opaque here, and Rev the store
// revision it is at. The zero Copy means none: the next step loads the job.
type Copy struct {
	Job any
	Rev int64
}

// Outcome is what one step reports.
type Outcome struct {
	Copy Copy // the job as the step left it; zero: reload it
	// After is when the next step is due, from the step's end, if Err is
	// nil and the job is not Done.
	After time.Duration
	Err   error
	Done  bool // completed, or deleted: release the system
}
