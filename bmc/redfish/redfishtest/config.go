package redfishtest

import (
	"maps"
	"net/http"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/clock"
)

// SessionMode selects how the simulated BMC answers session creation.
type SessionMode int

// Session modes.
const (
	// SessionsCreatedWithBody answers POST .../Sessions with 201 Created, a
	// Session body, X-Auth-Token and Location (most BMCs).
	SessionsCreatedWithBody SessionMode = iota
	// SessionsNoContent answers 204 No Content with only the X-Auth-Token and
	// Location headers (some BMCs; DMTF's redfishtool cannot log in to it).
	SessionsNoContent
	// SessionsNone offers no SessionService at all: the service root has no
	// Links.Sessions and every request must carry HTTP basic auth.
	SessionsNone
)

// ETagMode selects how PATCH requests treat the If-Match header.
type ETagMode int

// ETag modes.
const (
	// ETagsOptional accepts PATCH with or without If-Match; a stale If-Match
	// is answered 412 Precondition Failed.
	ETagsOptional ETagMode = iota
	// ETagsRequired answers PATCH without If-Match with 428 Precondition
	// Required.
	ETagsRequired
	// ETagsRejected answers any PATCH carrying If-Match with 400 Bad Request,
	// as some BMCs do.
	ETagsRejected
)

// BootOnceMode selects what happens to BootSourceOverrideEnabled=Once.
type BootOnceMode int

// Boot-once modes.
const (
	// BootOnceHonoured keeps a one-time override until the next boot.
	BootOnceHonoured BootOnceMode = iota
	// BootOnceIgnored answers the PATCH 204 but never applies a Once
	// override (Continuous still works).
	BootOnceIgnored
	// BootOnceReverted applies a Once override, then silently reverts it to
	// Disabled after Config.BootOnceRevertAfter.
	BootOnceReverted
	// BootOnceStoredAsContinuous answers the PATCH 204 but stores a Once
	// override as Continuous, so it outlives the next boot (some emulators
	// and firmware). Continuous and Disabled work as asked.
	BootOnceStoredAsContinuous
)

// MediaLocation selects where the virtual media collection hangs.
type MediaLocation int

// Media locations.
const (
	// MediaUnderManager puts VirtualMedia under /redfish/v1/Managers/BMC
	// (iDRAC, iLO, most OpenBMC builds).
	MediaUnderManager MediaLocation = iota
	// MediaUnderSystem puts VirtualMedia under each system (newer schema,
	// some Supermicro and Lenovo builds).
	MediaUnderSystem
	// MediaNone offers no virtual media.
	MediaNone
)

// Fault is an injected failure.
type Fault int

// Faults.
const (
	FaultNone  Fault = iota // answer normally
	Fault500                // 500 Internal Server Error
	Fault503                // 503 Service Unavailable with Retry-After
	FaultReset              // the TCP connection is closed without an answer
	FaultSlow               // the answer is delayed by Faults.SlowDelay
	// FaultLostAnswer handles the request (its effects happen) and then
	// closes the connection without the answer, as when a network or a
	// BMC drops a reply: the client cannot tell whether it landed.
	FaultLostAnswer
	// FaultLostAnswer503 handles the request (its effects happen) and
	// then answers 503 Service Unavailable instead of its answer, as a
	// BMC's front end that gave up on a back end that went on. Fault503
	// is the 503 of a request that was not handled.
	FaultLostAnswer503
	// FaultLostAnswerSlow handles the request (its effects happen) and
	// then holds the answer until the client gives up (a timeout) or
	// Faults.SlowDelay passed, and closes the connection without it.
	// FaultSlow delays the request before it is handled.
	FaultLostAnswerSlow
	// Fault400 refuses the request, unhandled, with 400 Bad Request
	// (Base.1.8.GeneralError): a permanent error, which a client does not
	// retry, as a BMC that rejects a change outright. With Faults.Func, it
	// makes chosen requests fail for good (one system's BIOS PATCH, say).
	Fault400
)

// Faults injects failures into a fraction of requests.
type Faults struct {
	// Rate is the probability (0..1) that a request is faulted. Defaults to 0.
	Rate float64
	// Kinds are the faults drawn from, uniformly. Defaults to 503 and reset.
	Kinds []Fault
	// SlowDelay is how long a FaultSlow answer waits. Defaults to 2s.
	SlowDelay time.Duration
	// Seed seeds the random draw, for reproducible runs. Defaults to 1.
	Seed int64
	// Func, when set, decides the fault of every request instead of Rate
	// (return FaultNone to answer normally). It must be safe for concurrent
	// use, and may call the Server's methods (e.g. ExpireSessions). The
	// service root and session creation are faulted too.
	Func func(method, path string) Fault
}

// Clock is the simulator's time source: [clock.Source], any value with
// Now (clock.Fake, for one). Defaults to the wall clock.
type Clock = clock.Source

// Config selects the simulated BMC's personality. The zero value is a
// well-behaved single-system BMC with sessions (201 with body), optional
// ETags, immediate power changes, every reset type honoured and virtual media
// under the Manager.
type Config struct {
	// Username and Password are the accepted credentials. Default to
	// "admin" and "redfishtest-secret".
	Username, Password string
	// Users are further accepted credentials, user name to password (a
	// second account, to test sessions under other credentials). Defaults
	// to none.
	Users map[string]string

	// Systems is the number of computer systems. Defaults to 1. They are
	// named "1", "2", ... with UUIDs from [SystemUUID].
	Systems int

	// Sessions selects the session behaviour. Defaults to
	// SessionsCreatedWithBody.
	Sessions SessionMode
	// SessionTTL expires sessions this long after their last use (401
	// afterwards). The SessionService reports it as SessionTimeout, rounded
	// up to at least 30 s (the schema minimum). Defaults to 0: sessions never
	// expire by themselves (SessionTimeout 1800); see [Server.ExpireSessions].
	SessionTTL time.Duration

	// ETags selects how If-Match is treated. Defaults to ETagsOptional.
	ETags ETagMode

	// PowerDelay is how long a power change takes to land after the
	// request was accepted; the system reports PoweringOn/PoweringOff
	// meanwhile. Defaults to 0 (immediate).
	PowerDelay time.Duration
	// PowerDelayFunc, when set, picks each change's delay instead of
	// PowerDelay (e.g. uniformly 1-11 s). It must be safe for concurrent use.
	PowerDelayFunc func() time.Duration
	// DropDuringTransition silently ignores (answers 204 but does nothing)
	// a reset request that arrives while a power change is still pending.
	// Defaults to false: such requests replace the pending change.
	DropDuringTransition bool
	// InvisiblePending hides pending power changes: until a change lands
	// (PowerDelay), the system keeps reporting the old PowerState, with no
	// PoweringOn/PoweringOff, while reset requests still act on the state
	// the pending change lands in (see pending.go). Defaults to false.
	InvisiblePending bool

	// ResetTypes are the advertised ComputerSystem.Reset types. Defaults to
	// On, ForceOff, GracefulShutdown, GracefulRestart, ForceRestart,
	// PowerCycle, PushPowerButton, Nmi.
	ResetTypes []string
	// RefusedResetTypes are advertised but answered 501 Not Implemented.
	RefusedResetTypes []string
	// ResetTypesInActionInfo advertises the reset types through a
	// ResetActionInfo resource instead of ResetType@Redfish.AllowableValues.
	ResetTypesInActionInfo bool

	// BootTargets are the allowed BootSourceOverrideTarget values.
	// Defaults to None, Pxe, Hdd, Cd, BiosSetup, UefiHttp.
	BootTargets []string
	// NoHTTPBootURI leaves HttpBootUri out of the system's Boot (a
	// ComputerSystem schema before v1_9) and answers a PATCH naming it 400
	// PropertyUnknown: the BMC cannot boot a given URI over UEFI HTTP.
	// Defaults to false: Boot has HttpBootUri and UEFI HTTP boot works
	// (UefiHttp is among the default BootTargets).
	NoHTTPBootURI bool
	// NoLastResetTime leaves LastResetTime out of the system, as on BMCs
	// that do not report when the system last reset. Defaults to false: the
	// system reports the time it last came on from off, or was cycled or
	// reset (fractional seconds, on Clock), or when the simulator started.
	NoLastResetTime bool
	// BootOnce selects what happens to one-time overrides. Defaults to
	// BootOnceHonoured.
	BootOnce BootOnceMode
	// BootOnceRevertAfter is how long a reverted Once override stays
	// visible. Defaults to 0 (reverted right after the PATCH is answered,
	// visible to no read).
	BootOnceRevertAfter time.Duration

	// BMCResetDowntime is how long the BMC does not answer after it
	// accepted a Manager.Reset (it forgets its sessions either way): every
	// request meanwhile, on any connection, is answered by closing the
	// connection, as a rebooting BMC's network stack does, logged with Note
	// "down" (Config.Clock). Defaults to 0: the BMC answers again at once.
	BMCResetDowntime time.Duration

	// RedirectAliases are further names of systems, alias to system ID
	// ("node-a" -> "1"): every request for /redfish/v1/Systems/<alias>,
	// or below it, is answered 307 Temporary Redirect to the same path
	// under /redfish/v1/Systems/<id>, before authentication (a BMC that
	// accepts a host name or serial in the address and redirects to the
	// canonical URL). The 307 answers are logged with Note "redirect".
	// Defaults to none.
	RedirectAliases map[string]string

	// EventStream offers Server-Sent Events: the service root links an
	// EventService whose ServerSentEventUri streams a ResourceChanged event
	// (OriginOfCondition: the system's @odata.id) each time a system's
	// power state settles to a new value (see events.go). Defaults to
	// false: no EventService (404).
	EventStream bool
	// Subscriptions offers the EventService's Subscriptions collection,
	// pushes to each subscription's Destination and SubmitTestEvent, in
	// the given personality (see subscriptions.go). Defaults to
	// SubscriptionsNone: no subscriptions (and, without EventStream, no
	// EventService).
	Subscriptions SubscriptionStyle
	// EventRetryAttempts is how often a push is tried before the event is
	// dropped (DeliveryRetryAttempts). Defaults to 3.
	EventRetryAttempts int
	// EventRetryInterval is the wait between two tries of a push (wall
	// time). Defaults to 50 ms.
	EventRetryInterval time.Duration

	// Media selects where virtual media hangs. Defaults to MediaUnderManager.
	Media MediaLocation

	// Faults injects failures. Defaults to none.
	Faults Faults

	// Firmware is the firmware update personality: UpdateService,
	// TaskService and firmware inventory (see firmware.go). Defaults to
	// SimpleUpdate, components BMC and BIOS at 1.0.0, tasks that complete
	// at once.
	Firmware FirmwareConfig
	// Hardware sizes each system's inventory (Processors, Memory, Storage,
	// EthernetInterfaces; see inventory.go) and shapes it (GPUs, what the
	// CPUs and NICs report, members that answer 404 or an invalid
	// document). Defaults to 2 processors, 4 DIMMs, 2 drives and 2
	// Ethernet interfaces, no GPU.
	Hardware Hardware
	// ExpandQuery advertises $expand in the service root
	// (ProtocolFeaturesSupported.ExpandQuery) and serves the inventory
	// collections' members inline when asked. Defaults to false.
	ExpandQuery bool
	// BIOS selects how BIOS settings apply (see bios.go). Defaults to
	// BIOSOnReset: pending until the system next boots.
	BIOS BIOSMode
	// SecureBoot selects how Secure Boot changes apply (see
	// secureboot.go). Defaults to SecureBootNextBoot.
	SecureBoot SecureBootApply
	// BootOrder selects how boot order changes apply (see bootorder.go).
	// Defaults to BootOrderImmediate.
	BootOrder BootOrderApply
	// BIOSObjectValues serves every BIOS attribute value as an object, as
	// HPE Cray EX nodes do: {"current_value": v}, with "AllowableValues"
	// for an enumeration, in the Bios and its settings object; adds two
	// structured attributes that cannot be set (BootOrder, an array;
	// MemoryTopology, an object without current_value); and the Bios names
	// no AttributeRegistry. A PATCH takes plain values, as usual. Defaults
	// to false: plain values.
	BIOSObjectValues bool
	// BIOSRegistryNotFound lists the BIOS attribute registry's file under
	// /redfish/v1/Registries as usual, but the file's Location answers 404
	// Not Found (a BMC that advertises a registry it does not serve).
	// Defaults to false.
	BIOSRegistryNotFound bool

	// Logs selects the event logs (LogServices of each system and of
	// Managers/BMC) and their entries' shape (see logs.go). Defaults to
	// LogsDMTF.
	Logs LogStyle
	// LogPageSize is how many entries one page of an entry collection
	// lists; further pages follow Members@odata.nextLink ($skip).
	// Defaults to 0: every entry on one page.
	LogPageSize int
	// NoHealth leaves Status out of the systems, the chassis and the
	// managers: a BMC that reports no health. Defaults to false: each has
	// Status with Health and HealthRollup ([Server.SetHealth]).
	NoHealth bool
	// Locator is where the systems' locator LED is and which properties
	// show it. Defaults to LocatorBoth: LocationIndicatorActive and
	// IndicatorLED on every system.
	Locator LocatorShape
	// Sensors are the chassis' sensors, served as its Thermal
	// (temperature, fan) and Power (voltage, power) resources, with
	// Status.Health, the reading and the thresholds given (sensors.go;
	// [Server.SetSensors], [Server.Sensors]). Defaults to none: the
	// chassis links neither resource.
	Sensors []bmc.SensorReading

	// Vendor shapes (see [VendorConfig] for the vendors that show them).

	// BootOverrideProperties are the override properties the system's
	// Boot has, among BootSourceOverrideTarget, BootSourceOverrideEnabled
	// and BootSourceOverrideMode (HttpBootUri is NoHTTPBootURI's). A PATCH
	// naming one it lacks is answered 400 PropertyUnknown, as a strict BMC
	// does. Defaults to nil: all three; an empty non-nil list: none (the
	// Boot of an HPE Cray EX node, which has no override).
	BootOverrideProperties []string
	// SchemaVersion is the ComputerSystem schema version in @odata.type,
	// e.g. "v1_10_0". Defaults to v1_20_0.
	SchemaVersion string
	// NoManagedBy leaves Links.ManagedBy out of every system, as on HPE
	// Cray EX nodes: only the managers' ManagerForServers say which one
	// manages it. Defaults to false.
	NoManagedBy bool
	// AuxiliaryManager lists a second manager first in the Managers
	// collection (/redfish/v1/Managers/AUX, ManagerType
	// AuxiliaryController): it manages no server and has no Manager.Reset.
	// Defaults to false: one manager, Managers/BMC.
	AuxiliaryManager bool
	// ManagerResetTypes are the ResetType values Managers/BMC's
	// Manager.Reset accepts (others: 400). Defaults to GracefulRestart and
	// ForceRestart.
	ManagerResetTypes []string
	// ManagerResetTypesInActionInfo advertises them only behind the
	// action's @Redfish.ActionInfo link (AMI MegaRAC), not inline.
	ManagerResetTypesInActionInfo bool
	// EmptyMediaImageNone reports empty virtual media with "Image": "None"
	// (AMI MegaRAC) instead of an empty string. Defaults to false.
	EmptyMediaImageNone bool
	// NoSystems serves an empty Systems collection: a chassis or enclosure
	// controller that manages no computer system. Systems is ignored.
	NoSystems bool

	// RequestLimit is the request rate, in requests per second, the
	// simulated endpoint serves, over all its systems and sessions (a
	// chassis manager or emulator that a flood of polls would overwhelm).
	// Each request takes a token from a bucket of RequestLimit tokens (about
	// a second of queue) refilled at RequestLimit per second
	// (Config.Clock); a request that finds it empty is answered 503 Service
	// Unavailable with Retry-After: 1, logged with Note "over limit" and
	// counted by [Server.OverLimit]. Refused requests take no token, and
	// are refused before fault injection. [Server.PeakRate] reports the
	// busiest second whatever the limit. Defaults to 0: unlimited; see also
	// [Server.SetRequestLimit].
	RequestLimit float64

	// OnStateChange, when set, is called once for every accepted
	// state-changing request (reset action, boot override PATCH, virtual
	// media insert or eject), after the server applied it, from the request's
	// goroutine before the answer is flushed, without the server's lock held.
	// It must be safe for concurrent use; order calls by StateChange.Seq.
	// Defaults to nil (not reported; [Server.Requests] still logs them).
	OnStateChange func(StateChange)

	// RequestDelayFunc, when set, picks how long each request waits before
	// the simulator handles it (right after OnRequest), as a real BMC takes
	// 50-500 ms to answer: the request's effects and its answer come that
	// much later. A request whose client gives up meanwhile is handled all
	// the same, as by a BMC that received it. It must be safe for
	// concurrent use. Defaults to nil: no wait.
	RequestDelayFunc func(method, path string) time.Duration

	// OnRequest, when set, is called for every request as it arrives, before
	// the simulator does anything with it (RequestDelayFunc, redirects, a BMC
	// reset's downtime, the rate limit, fault injection, authentication, routing),
	// from the request's goroutine: a log of every request a client sent,
	// reads included, in the order they arrived (OnStateChange reports only
	// the accepted changes). It may read the method, URL and headers (e.g.
	// CallerHeader) but must not read or keep the body; it must not block
	// and must be safe for concurrent use. Defaults to nil.
	OnRequest func(r *http.Request)

	// Clock is the time source for power delays, session expiry and boot
	// override reverts. Defaults to the wall clock.
	Clock Clock

	// Field quirks (quirks.go): behaviours reported on real BMCs, one
	// switch each; docs/vendors.md names the vendors that show them.

	// ActionIfMatchRejected answers 412 Precondition Failed to every action
	// POST (a target under .../Actions/) that carries If-Match, whatever its
	// value, as Dell iDRAC does for UpdateService.SimpleUpdate, and puts an
	// @odata.etag in every resource that has none, so a client that echoes
	// ETags sends one. Defaults to false.
	ActionIfMatchRejected bool
	// MaxSessions is how many sessions the BMC holds at once: a login
	// beyond them is answered 503 with iDRAC's RAC0218 message ("The
	// maximum number of user sessions is reached."), logged with Note
	// "sessions full", until a session is logged out or expires. Defaults
	// to 0: unlimited.
	MaxSessions int
	// NoPowerState leaves PowerState out of every ComputerSystem.
	// Defaults to false.
	NoPowerState bool
	// NullPowerState reports every ComputerSystem's PowerState as null.
	// Defaults to false.
	NullPowerState bool
	// UnavailableWhileOff lists systems ("1", ...) whose resource, and
	// everything below it, answers GET with 503 Service Unavailable
	// (Ami.1.0.HMCCommuicationFailed) while the system reports Off, as a
	// DGX H100's HGX baseboard does while the host is off; logged with Note
	// "unavailable while off". Defaults to none.
	UnavailableWhileOff []string
	// MediaPatchOnly serves virtual media without the InsertMedia and
	// EjectMedia actions (their targets answer 404), inserted by a PATCH
	// of the device's Image (and Inserted) and ejected by a PATCH of Image
	// null, answered 200, as older Lenovo XCC firmware does; a PATCH
	// without Image is refused (400). Defaults to false.
	MediaPatchOnly bool
	// BootModeResetUnlessSent sets BootSourceOverrideMode to Legacy (the
	// BMC's default) whenever a boot override PATCH sets a target without
	// naming the mode, as Supermicro BMCs do; the PATCH is answered 204
	// all the same. Defaults to false: an unnamed property keeps its value.
	BootModeResetUnlessSent bool
	// LowerCaseLinks serves every link in lower case, resource links with a
	// trailing slash ("/redfish/v1/systems/1/"), as HPE iLO does; a
	// request for a path handed out that way, in any case, reaches the
	// resource. Paths are otherwise served as always (the canonical case
	// still works, as iLO's case-insensitive paths do). Defaults to false.
	LowerCaseLinks bool

	// Accounts selects the AccountService (accounts.go). Username and
	// Password, then Users, are its first accounts, all Administrator;
	// logins are checked against the accounts, so a changed password
	// takes effect for new sessions and basic auth. Defaults to the DMTF
	// mockup's shape.
	Accounts AccountsConfig
}

func (c Config) withDefaults() Config {
	if c.Username == "" {
		c.Username = "admin"
	}
	if c.Password == "" {
		c.Password = "redfishtest-secret"
	}
	c.Users = maps.Clone(c.Users)
	if c.Accounts.MinPasswordLength == 0 {
		c.Accounts.MinPasswordLength = 8
	}
	if n := c.Accounts.FixedSlots; n < 0 || n == 1 {
		panic("redfishtest: AccountsConfig.FixedSlots must be 0 or at least 2 (slot 1 is the anonymous user)")
	}
	if c.Systems <= 0 {
		c.Systems = 1
	}
	if c.ResetTypes == nil {
		c.ResetTypes = []string{"On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart", "PowerCycle", "PushPowerButton", "Nmi"}
	}
	if c.ManagerResetTypes == nil {
		c.ManagerResetTypes = []string{"GracefulRestart", "ForceRestart"}
	}
	if c.SchemaVersion == "" {
		c.SchemaVersion = "v1_20_0"
	}
	if c.BootOverrideProperties == nil {
		c.BootOverrideProperties = bootFields
	}
	if c.BootTargets == nil {
		c.BootTargets = []string{"None", "Pxe", "Hdd", "Cd", "BiosSetup", "UefiHttp"}
	}
	c.Hardware = c.Hardware.withDefaults()
	if len(c.Faults.Kinds) == 0 {
		c.Faults.Kinds = []Fault{Fault503, FaultReset}
	}
	if c.Faults.SlowDelay == 0 {
		c.Faults.SlowDelay = 2 * time.Second
	}
	if c.Faults.Seed == 0 {
		c.Faults.Seed = 1
	}
	if c.Clock == nil {
		c.Clock = wallClock{}
	}
	return c
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }
