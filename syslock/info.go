package syslock

import (
	"context"
	"time"

	"github.com/bmckit/bmckit/storage"
)

// Info is what a system's lock record says, for readers outside the
// Runner and [StoreLocker] (package monitor checks it so that it never opens
// a session to a system that a job on another runner is using). See
// docs/jobs.md, "Exclusivity".
type Info struct {
	// Holder is the job that holds the system until it completed; "" when
	// the system is free.
	Holder string
	// HolderKeyPrefix is the KeyPrefix of the Runner or StoreLocker whose
	// job Holder is ("" when the system is free).
	HolderKeyPrefix string
	// Owner is who may act on the system now: a Runner's Config.Owner, or on
	// the controller path a StoreLocker's Owner. "" after a clean stop.
	Owner string
	// Lease is the lease's length. A lease has expired for a reader only
	// once it saw the same Revision for a whole Lease by its own clock;
	// never compare the writer's timestamps with the reader's clock.
	Lease time.Duration
	// Revision is the record's store revision; 0 when there is no record.
	Revision int64
}

// Read reads the lock record that Runners and StoreLockers sharing s
// keep for system, a [bmc.Endpoint.SystemKey] (under [KeyPrefix],
// whatever their KeyPrefix). A missing or undecodable record reads as a
// free system (Holder ""). Safe for concurrent use.
func Read(ctx context.Context, s storage.Store, system string) (Info, error) {
	l, rev, err := NewTable(s, DefaultNamespace, nil).Read(ctx, system)
	if err != nil {
		return Info{}, err
	}
	jobs := l.Jobs
	if jobs == "" && l.Holder != "" {
		jobs = DefaultNamespace
	}
	return Info{Holder: l.Holder, HolderKeyPrefix: jobs, Owner: l.Owner, Lease: time.Duration(l.LeaseMillis) * time.Millisecond, Revision: rev}, nil
}
