package redfishtest

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	mathrand "math/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

// Server is a simulated Redfish BMC served over httptest on 127.0.0.1. It is
// safe for concurrent use. Close it when done.
type Server struct {
	cfg  Config
	http *httptest.Server
	tls  bool

	conns     atomic.Int64
	logins    atomic.Int64
	overLimit atomic.Int64

	mu        sync.Mutex
	systems   []*system
	mgrMedia  []*media
	sessions  map[string]*session // by token
	nextID    int
	log       []Request
	rng       *mathrand.Rand
	faultFunc func(method, path string) Fault
	faultRate float64
	bmcResets int
	downUntil time.Time // after a Manager.Reset: requests are dropped until then
	changes   []PowerChange
	changeSeq int64 // last StateChange.Seq
	rate      requestRate
	events    eventHub               // events.go
	subs      subscriptionHub        // subscriptions.go
	fw        firmwareState          // firmware.go
	bios      map[string]*biosSystem // by system ID; bios.go
	sysLogs   map[string][]*simLog   // by system ID; logs.go
	mgrLogs   []*simLog              // Managers/BMC's; logs.go
	healthOf  map[string]HealthState // by resource path; logs.go
	leds      map[string]string      // locator LED by resource path; locatorled.go
	sensors   []bmc.SensorReading    // the chassis'; sensors.go
	accounts  simAccounts            // accounts.go

	secureBoot map[string]*secureBootSystem // by system ID; secureboot.go
	bootOrders map[string]*bootOrderSystem  // by system ID; bootorder.go
}

// PowerChange is one accepted power change, for measuring how soon a client
// notices it landed.
type PowerChange struct {
	System string
	// Target is "On" or "Off".
	Target string
	// Requested is when the request was accepted, Lands when the change
	// lands (Config.Clock).
	Requested, Lands time.Time
}

// Request is one entry of the request log. Session-creation bodies (which
// hold the password) are never recorded.
type Request struct {
	Method string
	Path   string
	// Status is the HTTP status answered, 0 for a reset connection.
	Status int
	// Fault is the injected fault, FaultNone for a normal answer.
	Fault Fault
	// IfMatch is the If-Match header sent, if any.
	IfMatch string
	// Body is the request body of PATCH and action POST requests.
	Body string
	// Note says what the simulator did with a request that was accepted but
	// not applied ("dropped", "ignored").
	Note string
	// Time is when the request arrived (Config.Clock).
	Time time.Time
}

type session struct {
	id       string
	token    string
	user     string
	lastUsed time.Time
}

type pendingChange struct {
	target string // "On" or "Off"
	landAt time.Time
	reboot bool // a restart/cycle: the server boots when it lands
}

type system struct {
	id, uuid string
	power    string
	pending  *pendingChange
	etag     int

	bootTarget, bootEnabled, bootMode string
	httpBootURI                       string
	revertAt                          time.Time

	boots     int
	lastReset time.Time // LastResetTime: the last boot, or the simulator's start
	resets    map[string]int
	dropped   int
	media     []*media
}

type media struct {
	id       string
	types    []string
	image    string
	inserted bool
}

// SystemState is a snapshot of one simulated system.
type SystemState struct {
	ID, UUID string
	// Power is the settled power state, "On" or "Off".
	Power string
	// Pending is the target of a change that has not landed yet, or "".
	Pending string
	// Boot override as the BMC holds it.
	BootTarget, BootEnabled, BootMode string
	// HTTPBootURI is the Boot's HttpBootUri ("" when never set; it is kept
	// when the override is consumed or disabled, as BMCs do).
	HTTPBootURI string
	// Boots counts how often the server started (off-to-on, restarts, cycles).
	Boots int
	// LastResetTime is when it last started (or the simulator's start), as
	// the system's LastResetTime reports it.
	LastResetTime time.Time
	// Resets counts accepted reset requests by ResetType.
	Resets map[string]int
	// Dropped counts reset requests silently dropped during a pending change.
	Dropped int
}

// MediaState is a snapshot of one virtual media device.
type MediaState struct {
	ID       string
	Inserted bool
	Image    string
}

// SystemUUID is the UUID of the i-th simulated system (1-based).
func SystemUUID(i int) string {
	return fmt.Sprintf("2c5a5f3e-0000-4000-8000-%012d", i)
}

// NewServer starts a simulated BMC speaking plain HTTP (use redfish+http://).
func NewServer(cfg Config) *Server { return start(cfg, false) }

// NewTLSServer starts a simulated BMC speaking HTTPS with a self-signed
// certificate; [Server.CACertPEM] returns it for a CA bundle.
func NewTLSServer(cfg Config) *Server { return start(cfg, true) }

func start(cfg Config, useTLS bool) *Server {
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:       cfg,
		tls:       useTLS,
		sessions:  map[string]*session{},
		rng:       mathrand.New(mathrand.NewSource(cfg.Faults.Seed)), //nolint:gosec // test fault draws, not security
		faultFunc: cfg.Faults.Func,
		faultRate: cfg.Faults.Rate,
	}
	s.rate.setLimit(cfg.RequestLimit)
	s.initFirmware()
	for i := 1; i <= cfg.Systems && !cfg.NoSystems; i++ {
		sys := &system{id: strconv.Itoa(i), uuid: SystemUUID(i), power: "Off", etag: 1, lastReset: cfg.Clock.Now(),
			bootTarget: "None", bootEnabled: "Disabled", bootMode: "UEFI", resets: map[string]int{}}
		if cfg.Media == MediaUnderSystem {
			sys.media = newMediaSet()
		}
		s.systems = append(s.systems, sys)
	}
	if cfg.Media == MediaUnderManager {
		s.mgrMedia = newMediaSet()
	}
	s.healthOf = map[string]HealthState{}
	s.sensors = bmc.CloneSensors(cfg.Sensors)
	s.initAccounts()
	s.initLogs()
	h := s.redirects(s.routes())
	if on, delay := cfg.OnRequest, cfg.RequestDelayFunc; on != nil || delay != nil {
		next := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if on != nil {
				on(r)
			}
			if delay != nil {
				if d := delay(r.Method, r.URL.Path); d > 0 {
					time.Sleep(d)
				}
			}
			next.ServeHTTP(w, r)
		})
	}
	s.http = httptest.NewUnstartedServer(h)
	// TLS handshake failures of clients that do not trust the test
	// certificate are expected in tests; keep them out of the output.
	s.http.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.http.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	if useTLS {
		s.http.StartTLS()
	} else {
		s.http.Start()
	}
	return s
}

func newMediaSet() []*media {
	return []*media{
		{id: "CD", types: []string{"CD", "DVD"}},
		{id: "USB", types: []string{"USBStick"}},
	}
}

// Close shuts the server down.
func (s *Server) Close() {
	s.closeEvents() // open event streams would keep Close waiting
	s.closeSubscriptions()
	s.http.Close()
}

// URL is the base URL, http://127.0.0.1:port or https://127.0.0.1:port.
func (s *Server) URL() string { return s.http.URL }

// Address is the bmckit URL of a system, e.g.
// redfish+http://127.0.0.1:port/redfish/v1/Systems/1; an empty systemID
// leaves the path out (the driver picks the only system).
func (s *Server) Address(systemID string) string {
	scheme := "redfish+http"
	if s.tls {
		scheme = "redfish+https"
	}
	a := scheme + "://" + strings.TrimPrefix(strings.TrimPrefix(s.http.URL, "http://"), "https://")
	if systemID != "" {
		a += "/redfish/v1/Systems/" + systemID
	}
	return a
}

// Endpoint is [Server.Address] parsed.
func (s *Server) Endpoint(systemID string) bmc.Endpoint {
	ep, err := bmc.ParseEndpoint(s.Address(systemID))
	if err != nil {
		panic("redfishtest: own address does not parse: " + err.Error())
	}
	return ep
}

// Credentials are the credentials the server was started with
// (Config.Username and Password): its first account. A password changed
// since through the AccountService is not reflected here.
func (s *Server) Credentials() bmc.Credentials {
	return bmc.Credentials{Username: s.cfg.Username, Password: s.cfg.Password}
}

// CACertPEM is the TLS server's certificate in PEM form (nil for plain HTTP),
// for a CA bundle.
func (s *Server) CACertPEM() []byte {
	if !s.tls {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.http.Certificate().Raw})
}

// Certificate is the TLS server's certificate (nil for plain HTTP).
func (s *Server) Certificate() *x509.Certificate {
	if !s.tls {
		return nil
	}
	return s.http.Certificate()
}

// Connections counts TCP connections accepted so far.
func (s *Server) Connections() int64 { return s.conns.Load() }

// Logins counts sessions created so far.
func (s *Server) Logins() int64 { return s.logins.Load() }

// ActiveSessions counts sessions not logged out or expired by
// [Server.ExpireSessions].
func (s *Server) ActiveSessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// ExpireSessions ends every session now, as a BMC whose session timeout
// passed does: the next request with an old token is answered 401.
func (s *Server) ExpireSessions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions = map[string]*session{}
}

// Requests returns a copy of the request log.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// ClearRequests empties the request log.
func (s *Server) ClearRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = nil
}

// PowerChanges returns every accepted power change so far.
func (s *Server) PowerChanges() []PowerChange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]PowerChange(nil), s.changes...)
}

// Down reports whether the BMC is restarting after a Manager.Reset (see
// Config.BMCResetDowntime): requests are dropped until it answers again.
func (s *Server) Down() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now().Before(s.downUntil)
}

// BMCResets counts accepted Manager.Reset requests.
func (s *Server) BMCResets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bmcResets
}

// SetFaults replaces the fault injection at run time (e.g. after a driver
// connected). Rate and Func as in [Faults]; Kinds and SlowDelay stay.
func (s *Server) SetFaults(rate float64, fn func(method, path string) Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faultRate, s.faultFunc = rate, fn
}

// System returns a snapshot of the system with the given ID ("1", "2", ...).
// It panics on an unknown ID.
func (s *Server) System(id string) SystemState {
	s.mu.Lock()
	defer s.mu.Unlock()
	sys := s.system(id)
	if sys == nil {
		panic("redfishtest: no system " + id)
	}
	s.settle(sys)
	st := SystemState{ID: sys.id, UUID: sys.uuid, Power: sys.power, BootTarget: sys.bootTarget,
		BootEnabled: sys.bootEnabled, BootMode: sys.bootMode, HTTPBootURI: sys.httpBootURI, Boots: sys.boots, LastResetTime: sys.lastReset, Dropped: sys.dropped,
		Resets: map[string]int{}}
	if sys.pending != nil {
		st.Pending = sys.pending.target
	}
	for k, v := range sys.resets {
		st.Resets[k] = v
	}
	return st
}

// SetPower sets a system's power state ("On" or "Off") at once, cancelling
// any pending change.
func (s *Server) SetPower(id, state string) {
	if state != "On" && state != "Off" {
		panic("redfishtest: SetPower wants On or Off, got " + state)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sys := s.system(id)
	if sys == nil {
		panic("redfishtest: no system " + id)
	}
	sys.power, sys.pending = state, nil
	sys.etag++
}

// Media returns a snapshot of the virtual media device ("CD" or "USB") of a
// system (ignored when media hangs under the Manager).
func (s *Server) Media(systemID, deviceID string) MediaState {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.mediaSet(systemID) {
		if m.id == deviceID {
			return MediaState{ID: m.id, Inserted: m.inserted, Image: m.image}
		}
	}
	panic("redfishtest: no media device " + deviceID)
}

func (s *Server) mediaSet(systemID string) []*media {
	if s.cfg.Media == MediaUnderManager {
		return s.mgrMedia
	}
	if sys := s.system(systemID); sys != nil {
		return sys.media
	}
	return nil
}

func (s *Server) system(id string) *system {
	for _, sys := range s.systems {
		if sys.id == id {
			return sys
		}
	}
	return nil
}

func (s *Server) now() time.Time { return s.cfg.Clock.Now() }

// settle applies a pending power change whose time came and a boot override
// revert that is due. Called with s.mu held.
func (s *Server) settle(sys *system) {
	now := s.now()
	if p := sys.pending; p != nil && !now.Before(p.landAt) {
		s.land(sys, p)
	}
	if !sys.revertAt.IsZero() && !now.Before(sys.revertAt) {
		sys.revertAt = time.Time{}
		if sys.bootEnabled == "Once" {
			sys.bootEnabled, sys.bootTarget = "Disabled", "None"
			sys.etag++
		}
	}
}

// settleAll settles every system: power changes land on time whether or
// not anyone reads the system (a boot that activates staged firmware, an
// event stream's scan). Called with s.mu held.
func (s *Server) settleAll() {
	for _, sys := range s.systems {
		s.settle(sys)
	}
}

func (s *Server) land(sys *system, p *pendingChange) {
	sys.pending = nil
	booted := p.target == "On" && (sys.power == "Off" || p.reboot)
	sys.power = p.target
	sys.etag++
	if booted {
		sys.boots++
		// Each start reports a later time, also on a clock that stands
		// still (a fake clock, an instant change right after another).
		prev := sys.lastReset
		sys.lastReset = p.landAt
		if !sys.lastReset.After(prev) {
			sys.lastReset = prev.Add(time.Nanosecond)
		}
		if sys.bootEnabled == "Once" {
			sys.bootEnabled, sys.bootTarget = "Disabled", "None"
		}
		s.activateFirmware(false) // host firmware staged for this boot
		s.biosBooted(sys)         // pending BIOS settings apply at boot
		s.secureBootBooted(sys)   // Secure Boot: held change, current boot
		s.bootOrderBooted(sys)    // held boot order and HTTP boot URI
	}
}

func (s *Server) powerDelay() time.Duration {
	if s.cfg.PowerDelayFunc != nil {
		return s.cfg.PowerDelayFunc()
	}
	return s.cfg.PowerDelay
}

// changePower schedules (or applies) a power change. Called with s.mu held.
func (s *Server) changePower(sys *system, target string, reboot bool) {
	p := &pendingChange{target: target, reboot: reboot, landAt: s.now().Add(s.powerDelay())}
	s.changes = append(s.changes, PowerChange{System: sys.id, Target: target, Requested: s.now(), Lands: p.landAt})
	sys.etag++
	if !p.landAt.After(s.now()) {
		s.land(sys, p)
		return
	}
	sys.pending = p
}

func newToken() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
