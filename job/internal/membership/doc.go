// Package membership is how the job package's Runner replicas on one Store
// know each other, and what they derive from it: each one's share of the
// claimable systems, whether to give a system back, and which systems to
// try first (docs/jobs.md, "Replicas share the fleet").
//
// Each Runner keeps a heartbeat record, <KeyPrefix>runners/<Owner>, written
// at Start and then with its lock renewals ([View.Heartbeat]). It counts the
// live replicas by listing those records and judging each by observation on
// its own clock, as locks are judged (syslock.Table.Expired): a record seen
// unchanged for its whole lease is dead, and is deleted. A runner claims no
// more than its share of the systems with unfinished jobs ([View.Share]),
// and one that holds more gives systems back when their jobs complete
// ([View.GiveBack]), never mid-job, while another live replica has room.
//
// The systems beyond the share are only watched: the Runner reads their
// locks without writing and tells the View what it found
// ([View.Watched]), so a system found takeable is tried first once the
// share allows ([View.Prefer]), claimed whatever the share once nobody took
// it for a lease ([View.Overdue]), and its finding starts the next claim
// round at once ([View.TakeFound]).
//
// The View keeps no goroutine: the Runner's event loop calls Heartbeat and
// Tick, which say when to launch [View.Beat] (a write of the record and a
// listing, or a listing) in the background.
package membership
