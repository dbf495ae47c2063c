// Package redfishtest is a simulated Redfish BMC for tests: an httptest
// server on 127.0.0.1 (plain HTTP or TLS) that models what real BMCs do, each
// behaviour switchable through [Config].
//
//	srv := redfishtest.NewServer(redfishtest.Config{PowerDelay: 2 * time.Second})
//	defer srv.Close()
//	drv, err := redfish.NewDialer(redfish.Options{}).Dial(ctx, srv.Endpoint("1"), srv.Credentials())
//
// # Personalities
//
//   - Sessions: created 201 with a body, 204 without one, or no
//     SessionService at all (basic auth only); sessions expire after
//     [Config.SessionTTL] or at once with [Server.ExpireSessions].
//     Credentials are checked.
//   - ETags: If-Match optional, required (428 without) or rejected (400
//     with); a stale one is answered 412.
//   - Power: changes land after [Config.PowerDelay] (PoweringOn/PoweringOff
//     meanwhile); a second request during a pending change can be silently
//     dropped; reset types can be advertised (AllowableValues or ActionInfo)
//     and refused with 501.
//   - Boot override: Once can be honoured, ignored, reverted or stored as
//     Continuous (Config.BootOnce); PATCH bodies with read-only or unknown
//     properties are refused, like real BMCs do.
//     UEFI HTTP boot (UefiHttp with HttpBootUri) works by default; a BMC
//     without it drops UefiHttp from [Config.BootTargets] or has no
//     HttpBootUri ([Config.NoHTTPBootURI]).
//   - BMC reset (Manager.Reset): sessions are forgotten, and the BMC can
//     drop every request for [Config.BMCResetDowntime] ([Server.Down]).
//   - Virtual media (CD and USB) under the Manager or under each System.
//   - Several systems, with UUIDs from [SystemUUID].
//   - Faults: a fraction of requests answered 500 or 503, slowly, or with
//     the connection reset ([Faults], [Server.SetFaults]); refused for
//     good with a 400 ([Fault400], with Faults.Func for chosen requests);
//     or handled and then their answer lost: the connection closed, a 503,
//     or held until the client gives up ([FaultLostAnswer], [FaultLostAnswer503],
//     [FaultLostAnswerSlow]).
//   - Firmware update ([FirmwareConfig]): SimpleUpdate and multipart push
//     followed through tasks; an inventory in SoftwareInventory, no
//     TaskService, updates answered with no task, iLO's
//     UpdateService.Oem.Hpe.State, members with RelatedItem.
//   - Capacity: [Config.RequestLimit] requests per second over the whole
//     endpoint; beyond it requests are answered 503 with Retry-After and
//     counted ([Server.OverLimit]); [Server.PeakRate] is the busiest second.
//   - Health and event logs (logs.go): Status.Health and HealthRollup on
//     the systems, the chassis and the manager ([Server.SetHealth],
//     [Config.NoHealth]); the chassis' sensors as its Thermal and Power
//     ([Config.Sensors], [Server.SetSensors]; sensors.go); LogServices
//     under each system and the manager
//     in the DMTF, iLO 5, OpenBMC or Cray EX shape ([Config.Logs]), with
//     entries a test adds ([Server.AddLogEntry]) and reads back
//     ([Server.LogEntries]), paged ([Config.LogPageSize]) and cleared by
//     LogService.ClearLog.
//   - More accounts than one ([Config.Users]).
//   - Field quirks (quirks.go; docs/vendors.md names the vendors): action
//     POSTs with If-Match refused 412 ([Config.ActionIfMatchRejected]),
//     few session slots ([Config.MaxSessions]), no or null PowerState,
//     systems answering 503 while off ([Config.UnavailableWhileOff]),
//     virtual media changed only by PATCH ([Config.MediaPatchOnly]), the
//     boot mode reset unless sent ([Config.BootModeResetUnlessSent]),
//     lower-case links ([Config.LowerCaseLinks]).
//
// # Observing
//
// [Server.Requests] is the request log (session bodies, which carry the
// password, are never recorded); [Server.Connections] and [Server.Logins]
// count TCP connections and sessions; [Server.System] and [Server.Media]
// snapshot the simulated state. [Config.OnStateChange] reports every accepted
// reset, boot override PATCH and media action as it is applied, numbered in
// order and tagged with the caller's X-Bmckit-Call header ([StateChange]),
// so a test can check which client changed what, when. A [Config.Clock]
// makes delays and expiry run on a clock the test advances.
package redfishtest
