// Package syslock keeps two jobs, and two processes, from acting on one
// system (a server behind a BMC, named by [bmc.Endpoint.SystemKey]) at the
// same time.
//
// A lock is held by a job (its holder) and by the process acting for it
// (its owner), for a lease; it is released by job, by whichever process
// ended the job ([Locker.Unlock]). [Locker] is the contract the job package's
// Stepper takes (job.StepperConfig.Locks); [StoreLocker] implements it over
// any storage.Store with the same records the job package's Runner writes,
// so Runners and controllers sharing a Store exclude each other on a system
// whatever their key prefixes; a Kubernetes Lease-backed Locker
// (contrib/kubernetes/leaselock) fits the same two methods. A host that
// keeps jobs apart by other means says so with [NoLocking]. [Read] reads a
// system's lock for observers that must not open a session to a system in
// use (package monitor).
//
// Expiry is judged by observation, never by comparing clocks: a lease has
// expired for a taker only once it saw the record unchanged for the whole
// lease by its own clock, and the holder stops acting a sixth of a lease
// ([Margin]) before its own lease ends. docs/jobs.md ("Exclusivity",
// "Fencing") has the protocol and its measurements.
package syslock
