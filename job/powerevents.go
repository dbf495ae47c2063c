package job

import "time"

// Event-driven confirmation of power changes.
//
// Where the job's driver implements bmc.PowerWatcher (Redfish with an
// EventService that offers Server-Sent Events) and the host can be woken
// (StepperConfig.Wake; the Runner always can), a power task that is still
// waiting after its read-back registers a watch on the driver. The driver
// keeps one stream per session, shared by every system on it, and calls the
// watch's notify from its own goroutine; notify only records the event and
// calls Wake, so a waiting job costs no goroutine. The woken step confirms the
// change with one read (PowerState stays the only source of truth).
//
// Polling never stops, it only thins out: while a watch is live on an
// endpoint whose events proved themselves ("trusted": a change came with an
// event, and no two changes in a row were found by polls while a watch was
// live and silent), the next poll is at least PowerEvents.PollInterval
// away; otherwise the usual (adaptive or fixed) schedule applies and events
// only shorten it. When the stream ends mid-wait (notify with an error), the
// job is woken and polls on the usual schedule for the rest of that wait.

// PowerEvents configures event-driven confirmation of power changes; the
// zero value turns it on with the defaults below.
type PowerEvents struct {
	// Disabled turns it off: power tasks only poll. Defaults to false (on
	// where the driver implements bmc.PowerWatcher and the host can be woken,
	// see StepperConfig.Wake).
	Disabled bool
	// PollInterval is how often a task still polls while a trusted event
	// stream is live, in case an event is lost. Defaults to 10s.
	PollInterval time.Duration
}
