package monitor

import (
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
)

// TypeContactable is the condition type the monitor keeps on every machine:
// True when the BMC answered the last read, False (with one of the reasons
// below) when it did not, Unknown until the first read.
const TypeContactable = "Contactable"

// Reasons of the Contactable condition.
const (
	// ReasonContacted: the BMC answered the last read (status True).
	ReasonContacted = "Contacted"
	// ReasonRotationInProgress: the BMC refused the current credentials and
	// answered to the pending ones of a credential rotation under way
	// (bmc.CredentialsStore; docs/credential-rotation.md). Status True: the
	// machine is reachable.
	ReasonRotationInProgress = "RotationInProgress"
	// ReasonPending: the machine was added (or its address or credentials
	// reference changed) and has not been read since (status Unknown).
	ReasonPending = "Pending"
	// ReasonUnauthorized: the BMC refused the credentials.
	ReasonUnauthorized = conditions.ReasonUnauthorized
	// ReasonUnreachable: no connection to the BMC (refused, no route, name
	// not found, connection dropped before an answer), or no answer at all
	// from a UDP (IPMI) BMC.
	ReasonUnreachable = "Unreachable"
	// ReasonTLSError: the TLS handshake failed (untrusted or mismatched
	// certificate, or no TLS on the port).
	ReasonTLSError = "TLSError"
	// ReasonTimeout: the BMC accepted the connection but did not answer
	// within Config.ReadTimeout.
	ReasonTimeout = "Timeout"
	// ReasonCredentialsUnresolved: Config.Credentials could not resolve the
	// machine's credentials reference; the BMC was not contacted.
	ReasonCredentialsUnresolved = "CredentialsUnresolved"
	// ReasonNotSupported: the BMC (or its driver) cannot report the power
	// state.
	ReasonNotSupported = conditions.ReasonNotSupported
	// ReasonBMCError: the BMC answered with an error (a 5xx, a refused
	// command, an expired session it would not renew).
	ReasonBMCError = conditions.ReasonBMCError
)

// Machine is the durable record the monitor keeps for one system, stored as
// JSON under <KeyPrefix>machines/<escaped SystemKey>. It is a plain struct
// with no interface fields, so a host can copy it into its own object (a
// CRD status). It never holds a secret: credentials are named by reference.
type Machine struct {
	// BMC is the machine's BMC address as last added (a URL in the style of
	// bmc.ParseEndpoint, never with credentials).
	BMC string `json:"bmc"`
	// System is the machine's identity: bmc.Endpoint.SystemKey of BMC, the
	// key job locks and the connection pool use.
	System string `json:"system"`
	// CredentialsRef names the credentials Config.Credentials resolves at
	// each read.
	CredentialsRef string `json:"credentialsRef,omitempty"`
	// Generation counts the changes of BMC and CredentialsRef made by Add,
	// starting at 1.
	Generation int64 `json:"generation"`
	// Status is what the last read found.
	Status Status `json:"status"`
	// Refresh is the replicas' bookkeeping of who reads the machine when.
	Refresh Refresh `json:"refresh"`
}

// Status is the observed state of a machine.
type Status struct {
	// ObservedGeneration is the Generation the last read was made for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions holds the Contactable condition, the Healthy
	// condition once the BMC reported health, and the CriticalBMCEvent
	// condition once a critical BMC event was followed (Config.Events).
	// LastTransitionTime moves only when a condition's status flips.
	Conditions []conditions.Condition `json:"conditions,omitempty"`
	// Power is the power state the BMC last reported. It is kept when a
	// later read fails (Contactable False): it is then the last known
	// state, as of LastReadTime.
	Power bmc.PowerState `json:"power,omitempty"`
	// Health is the health the BMC last reported (nil before it was
	// read). Like Power, it is kept when a later read fails.
	Health *Health `json:"health,omitempty"`
	// Inventory is the schedule and outcome of the inventory reads
	// (Config.InventoryInterval); the inventory itself is stored beside
	// the record ([Monitor.Inventory]). Nil before the first read.
	Inventory *InventoryStatus `json:"inventory,omitempty"`
	// CriticalEvents says which critical BMC events the CriticalBMCEvent
	// condition reflects (Config.Events); nil before the first.
	CriticalEvents *CriticalEventStatus `json:"criticalEvents,omitempty"`
	// LastReadTime is when the BMC last answered a read (by the clock of
	// the replica that read it).
	LastReadTime time.Time `json:"lastReadTime,omitzero"`
	// LastAttemptTime is when the last read was made, answered or not (the
	// time of the claim the read follows, by the reading replica's clock).
	LastAttemptTime time.Time `json:"lastAttemptTime,omitzero"`
}

// Refresh is the work-sharing bookkeeping: a replica reads a machine only
// after it wrote its claim on the next interval here by compare-and-swap,
// so each machine is read by one replica per interval.
type Refresh struct {
	// Owner is the replica (Config.Owner) that claimed the current
	// interval; "" when nobody did since the machine was added or changed:
	// it is then due at once.
	Owner string `json:"owner,omitempty"`
	// Seq counts the claims.
	Seq int64 `json:"seq,omitempty"`
	// Claimed is when Owner claimed the interval, by Owner's clock.
	Claimed time.Time `json:"claimed,omitzero"`
	// Next is when Owner will read the machine again, by Owner's clock.
	// Other replicas do not compare it with their own clocks: they count
	// an interval from when they first saw the claim.
	Next time.Time `json:"next,omitzero"`
}

// Contactable returns the Contactable condition, or nil before the record
// has one.
func (m *Machine) Contactable() *conditions.Condition {
	return conditions.Get(m.Status.Conditions, TypeContactable)
}

// Decode decodes a machine record's value, e.g. from a storage.Follower of
// [Monitor.Prefix].
func Decode(value []byte) (*Machine, error) {
	var m Machine
	if err := json.Unmarshal(value, &m); err != nil {
		return nil, fmt.Errorf("monitor: decoding machine record: %w", err)
	}
	return &m, nil
}

func encode(m *Machine) ([]byte, error) { return json.Marshal(m) }

// Key returns the Store key of the record of the machine at bmcURL
// ([Monitor.Prefix] followed by its escaped bmc.Endpoint.SystemKey), for
// hosts and tests that read or watch one machine's raw record. Two
// spellings of one system's address give the same key.
func (m *Monitor) Key(bmcURL string) (string, error) {
	ep, err := bmc.ParseEndpoint(bmcURL)
	if err != nil {
		return "", fmt.Errorf("monitor: %w", err)
	}
	return recordKey(m.prefix, ep.SystemKey()), nil
}

// recordKey is the key of system's record under prefix (<KeyPrefix>machines/).
func recordKey(prefix, system string) string { return prefix + url.PathEscape(system) }
