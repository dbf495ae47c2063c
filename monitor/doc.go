// Package monitor keeps fleet awareness: a durable record per machine with a
// Contactable condition, the power state and the time of the last
// successful read, refreshed on a jittered interval, so operators see dead
// BMCs and wrong credentials before a job fails on them.
//
//	mon, _ := monitor.New(monitor.Config{
//		Store:       store,
//		Pool:        runner.Pool(),  // share the job Runner's sessions
//		Owner:       "bmckit-0",     // the Runner's Config.Owner
//		Credentials: resolver,
//	})
//	go mon.Start(ctx)                // blocks; a manager.Runnable
//	mon.Add(ctx, "redfish://10.0.0.5/redfish/v1/Systems/1", "rack12")
//
// # Records
//
// Each machine is a [Machine] record, JSON under
// <KeyPrefix>machines/<escaped SystemKey> (the identity job locks use): the
// BMC address and credentials reference (never a secret), Generation, and a
// [Status] with the Contactable condition (True, or False with a reason:
// [ReasonUnauthorized], [ReasonUnreachable], [ReasonTLSError],
// [ReasonTimeout], [ReasonCredentialsUnresolved], [ReasonNotSupported],
// [ReasonBMCError]; the message names the BMC), the power state, and
// LastReadTime; and the health the BMC reports ([Health]) with a
// [TypeHealthy] condition (False with [ReasonHealthCritical] at Critical).
// Conditions follow conditions.Set: LastTransitionTime moves only when a
// status flips. Hosts follow the records through the
// Store's change feed ([Monitor.Follower], [Decode]) or read them with
// [Monitor.Get] and [Monitor.List].
//
// # Reads
//
// A refresh is one [bmc.Driver.PowerState] call through a connpool.Pool
// ([bmc.SystemStatusReader.SystemStatus] where the driver has it: the same
// request, with the system's health): one GET of the system on Redfish when
// the session is open. Every Config.HealthEvery refreshes, a machine whose
// power read carries no health also gets the full report
// ([bmc.HealthReader]); changes of health go to Config.Observer. Give the monitor
// the job Runner's pool (Runner.Pool): it then reads a system a job is using
// on that job's session, never a second one, and its requests count against
// the drivers' per-endpoint request budget, which lives in the Dialer behind
// the pool. A machine is read at once when it is added, when its address or
// credentials reference changes, and when its resolved credentials change
// (checked every Config.CredentialsCheckInterval, or at once after
// [Monitor.CredentialsChanged]).
//
// On the same claim and session, after the power read: the hardware
// inventory ([bmc.InventoryReader]) on the first refresh and then every
// Config.InventoryInterval (a day, ±10%), stored beside the record
// ([Monitor.Inventory], [MachineInventory]) with its schedule on the record
// ([InventoryStatus]); and, with Config.Subscriptions ([EventSubscriptions],
// a bmcevents.Manager through [SubscriptionsFrom]), the BMC's event
// subscription, ensured every Config.SubscriptionEvery refreshes under the
// name [EventSource] and released by [Monitor.Remove]; where the BMC cannot
// push (or there are no subscriptions), with Config.EventLogs
// ([EventLogPoller], a bmcevents.Source), a poll of its logs into the event
// store on the same refreshes. Of the systems behind one BMC, one does this
// for all.
//
// # Critical BMC events
//
// With Config.Events ([EventFollower], a bmcevents.Follower), the running
// monitor follows the event store every Config.ScanInterval and sets the
// [TypeCriticalBMCEvent] condition on the records of the machines a
// Critical event concerns, with [CriticalEventStatus] saying which events
// it reflects; replicas following one store write it once
// ([Observer.CriticalEvent], Stats.CriticalEvents).
//
// # Replicas
//
// Monitors sharing a Store share the work. A replica reads a machine only
// after it won a compare-and-swap of the record that claims the next
// interval (Refresh), so each machine is read by one replica per interval.
// Other replicas count the interval from when they saw the claim, by their
// own clocks, never by comparing the claimer's timestamps with theirs; a
// dead replica's machines are taken over one interval after its last claim
// was seen. A system whose job lock another runner holds is skipped until
// the job is done.
//
// docs/monitor.md has the decisions and the alternatives rejected.
package monitor
