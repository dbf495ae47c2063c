package ipmitest

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bmckitclock "github.com/bmckit/bmckit/clock"
	gobmc "github.com/bougou/go-ipmi/pkg/bmc"
	"github.com/bougou/go-ipmi/pkg/clock"
	"github.com/bougou/go-ipmi/pkg/handlers"
	"github.com/bougou/go-ipmi/pkg/server"
	"github.com/bougou/go-ipmi/pkg/transport"
	"github.com/bougou/go-ipmi/pkg/transport/udp"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/bmckit/bmckit/bmc"
)

// DefaultPassword is the simulators' administrator password when none is
// given.
const DefaultPassword = "tK4v9"

// Options configure a [Server]. The zero value is ready to use.
type Options struct {
	// Username and Password of the one administrator account. Default to
	// "admin" and "tK4v9" (short, so that a test can append to it and stay
	// within IPMI's 20-byte password limit).
	Username, Password string
	// CipherSuites the server accepts. Defaults to 3 and 17.
	CipherSuites []int
	// PoweredOn is the initial power state. Defaults to off.
	PoweredOn bool
	// PowerDelay makes power changes land this long after the BMC accepted
	// them, as on real servers (IPMI reports no transitional state: the
	// old state reads back until then). Defaults to 0: at once.
	PowerDelay time.Duration
	// BMCResetDowntime makes the BMC drop every packet it receives for this
	// long (by Clock) after it answered a Cold or Warm Reset (App 02h/03h),
	// as a BMC that restarts does (see also [Server.SetSilent]). A Cold
	// Reset also ends every session, whatever this is. Defaults to 0: it
	// answers again at once.
	BMCResetDowntime time.Duration

	// SessionTimeout is how long a session may stay idle: a request on a
	// session idle longer is dropped (no answer, as real BMCs do) and the
	// session is forgotten, so the client must log in again. Measured with
	// Clock. Defaults to 0: IPMI v2.0's 60 s (section 6.12.15).
	SessionTimeout time.Duration

	// BootFlagTimeout is how long a one-time boot flag (Set System Boot
	// Options parameter 5, valid and not persistent) stays valid without a
	// Chassis Control command: then the BMC clears the valid bit, as IPMI
	// v2.0 (section 28.12, parameter 3) has BMCs do after 60 s. A Chassis
	// Control command restarts the countdown, and a client that sets
	// "don't clear on timeout" (parameter 3, bit 3) keeps the flag. Measured
	// with Clock. Persistent flags never time out. Defaults to 0: one-time
	// flags never time out ([Realistic] sets 60 s). Whatever this is, the
	// next boot (a power-on, power cycle or hard reset that lands) clears a
	// one-time flag.
	BootFlagTimeout time.Duration

	// Clock is the time source for PowerDelay, BMCResetDowntime,
	// SessionTimeout and BootFlagTimeout (e.g. a [clock.Fake] from
	// github.com/bmckit/bmckit/clock, advanced by the test: a delayed
	// change lands when a read finds its time has come). Defaults to the
	// wall clock.
	Clock Clock

	// DowngradeCipherSuite makes the BMC answer an RMCP+ Open Session
	// Request for cipher suite 17 (HMAC-SHA256, AES-CBC-128) as one for
	// suite 3 (HMAC-SHA1, AES-CBC-128): the Open Session Response names
	// suite 3's algorithms and the session, if the client goes on, uses
	// them. This is the substitution of pyghmi's BMC and older firmwares
	// (and of a man in the middle that downgrades the negotiation): a
	// client must not run the substituted algorithms (ipmitool refuses;
	// bmckit's driver opens a fresh session with its next allowed suite).
	// Suite 3 must be among CipherSuites (it is by default).
	DowngradeCipherSuite bool

	// ReplayOldReplies makes the BMC re-send the last reply of the previous
	// session before each session-setup reply of a new one (Open Session
	// Response, RAKP 2, RAKP 4) and before its first in-session reply, as a
	// BMC that keys session state by client address does when a new dial
	// reuses a closed session's source port. The stale reply is an
	// encrypted IPMI payload under the old session's keys and console
	// session ID; a client must drop it. [Server.Replayed] counts them.
	ReplayOldReplies bool

	// SELCapacity is how many records the System Event Log holds
	// ([Server.SEL]); a full SEL refuses more. Defaults to
	// DefaultSELCapacity.
	SELCapacity int
	// SELErasePolls is how many Clear SEL status queries after an erase
	// was initiated answer "erasure in progress" before one answers
	// "completed", as BMCs that erase flash do. Defaults to 0: completed
	// at once.
	SELErasePolls int

	// FRU is the data of FRU device 0 (Get FRU Inventory Area Info, Read
	// FRU Data), e.g. from [EncodeFRU]. Defaults to none: the FRU commands
	// answer "requested data not present".
	FRU []byte

	// Sensors are the BMC's sensors and its SDR repository
	// ([Server.Sensors]). Defaults to none: an empty repository.
	Sensors []Sensor
	// SDRReadLimit makes Get SDR refuse to return more than this many
	// bytes at once (completion code CAh), as BMCs with small buffers do:
	// clients then read records in pieces. Defaults to 0: whole records.
	SDRReadLimit int
	// UserSlots is the number of user IDs (Get User Access's maximum):
	// user 1 the null user, user 2 the administrator of Username and
	// Password, the others empty, for the user commands (users.go).
	// At most 63. Defaults to DefaultUserSlots.
	UserSlots int
}

// Clock is the simulator's time source: bmckit's [bmckitclock.Source], any
// value with Now (bmckit's clock.Fake, for one).
type Clock = bmckitclock.Source

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// goipmiClock gives go-ipmi's BMC the simulator's notion of now (for its
// own session eviction); its tickers stay on the wall clock.
type goipmiClock struct{ c Clock }

func (g goipmiClock) Now() time.Time                       { return g.c.Now() }
func (goipmiClock) NewTimer(d time.Duration) clock.Timer   { return clock.Real.NewTimer(d) }
func (goipmiClock) NewTicker(d time.Duration) clock.Ticker { return clock.Real.NewTicker(d) }

// Server is go-ipmi's reference BMC (github.com/bougou/go-ipmi/pkg/server)
// serving IPMI v2.0 lanplus on a UDP port on 127.0.0.1, with a chassis that
// keeps power and boot state. It is safe for concurrent use.
type Server struct {
	// Endpoint is ipmi://127.0.0.1:PORT.
	Endpoint bmc.Endpoint
	// Credentials log in as the server's administrator.
	Credentials bmc.Credentials

	chassis *Chassis
	sel     *SEL
	sensors *Sensors
	srv     *server.Server
	conn    *silenceableConn
	done    chan struct{}
	once    sync.Once
}

// NewServer starts a Server for a test and stops it when the test ends. It
// fails the test if the server cannot start.
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := Start(opts)
	if err != nil {
		t.Fatalf("ipmitest: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Start starts a Server on a free UDP port on 127.0.0.1. Call Close to stop it.
func Start(opts Options) (*Server, error) {
	user, pass := opts.Username, opts.Password
	if user == "" {
		user = "admin"
	}
	if pass == "" {
		pass = DefaultPassword
	}
	suites := []types.CipherSuiteID{types.CipherSuiteID3, types.CipherSuiteID17}
	if len(opts.CipherSuites) > 0 {
		suites = suites[:0]
		for _, s := range opts.CipherSuites {
			suites = append(suites, types.CipherSuiteID(s))
		}
	}

	clk := opts.Clock
	if clk == nil {
		clk = wallClock{}
	}
	sessionTimeout := opts.SessionTimeout
	if sessionTimeout <= 0 {
		sessionTimeout = gobmc.DefaultInactivityTimeout
	}
	ch := &Chassis{on: opts.PoweredOn, delay: opts.PowerDelay, clock: clk, onceTimeout: opts.BootFlagTimeout}
	var guid [16]byte
	copy(guid[:], "bmckit-ipmitest")
	b := gobmc.New(gobmc.DeviceInfo{
		// IPMI version is BCD with the minor digit in the high nibble
		// (IPMI v2.0 table 20-2): 02h is version 2.0.
		DeviceID: 0x20, DeviceRevision: 1, FirmwareMajor: 1, IPMIVersion: 0x02,
		ManufacturerID: 0x000157, ProductID: 1,
	}, guid, newSimHAL(ch, opts.FRU), gobmc.WithClock(goipmiClock{clk}), gobmc.WithCipherSuites(suites))
	if opts.SessionTimeout > 0 {
		b.Sessions = gobmc.NewSessionStoreWithOptions(goipmiClock{clk}, gobmc.WithInactivityTimeout(opts.SessionTimeout))
	}
	u, err := b.Users.Add(2, user)
	if err != nil {
		return nil, fmt.Errorf("add simulator user: %w", err)
	}
	u.SetPassword([]byte(pass))
	u.Enabled = true
	u.ChannelAccess[1] = gobmc.UserChannelAccess{MaxPrivilege: gobmc.PrivilegeLevelAdministrator, Enabled: true}

	// The standard handlers, except that go-ipmi routes the BMC's own
	// Cold/Warm Reset (App 02h/03h) to the chassis HAL's hard reset and
	// soft shutdown; here they only count, as a BMC reset leaves the host
	// alone.
	reg := handlers.NewRegistry()
	handlers.RegisterAppHandlers(reg)
	handlers.RegisterSessionHandlers(reg)
	handlers.RegisterChassisHandlers(reg)
	handlers.RegisterStorageHandlers(reg)
	registerBootOptionHandlers(reg, ch)
	reg.RegisterFunc(types.CommandGetChassisStatus, ch.handleGetChassisStatus)
	registerIdentifyHandlers(reg, ch)
	sel := newSEL(clk, opts.SELCapacity, opts.SELErasePolls)
	sel.register(reg)
	sensors, err := newSensors(clk, opts.Sensors, opts.SDRReadLimit)
	if err != nil {
		return nil, fmt.Errorf("Options.Sensors: %w", err)
	}
	sensors.register(reg)
	reg.RegisterFunc(types.CommandGetSessionInfo, handleGetSessionInfo)
	slots := opts.UserSlots
	if slots <= 0 {
		slots = DefaultUserSlots
	}
	if slots < 2 || slots > gobmc.MaxUsers {
		return nil, fmt.Errorf("Options.UserSlots %d: want 2 to %d", opts.UserSlots, gobmc.MaxUsers)
	}
	(&users{store: b.Users, slots: slots}).register(reg)
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("listen on 127.0.0.1: %w", err)
	}
	pc := &silenceableConn{PacketConn: udp.Wrap(conn), downgrade: opts.DowngradeCipherSuite, replay: opts.ReplayOldReplies,
		bmc: b, clock: clk, sessionTimeout: sessionTimeout, seen: map[uint32]time.Time{}}
	// The reply to the reset still goes out: only what arrives afterwards
	// is dropped. After a cold reset the BMC has forgotten every session;
	// a warm reset keeps them (IPMI v2.0 section 20.3; ipmitool closes its
	// session after "mc reset warm", not after "mc reset cold").
	restart := func(cold bool) {
		if d := opts.BMCResetDowntime; d > 0 {
			pc.until.Store(clk.Now().Add(d).UnixNano())
		}
		if cold {
			pc.forgetSessions()
		}
	}
	reg.RegisterFunc(types.CommandColdReset, func(context.Context, *handlers.HandlerContext, []byte) ([]byte, types.CompletionCode, error) {
		ch.count(func() { ch.bmcColdResets++ })
		restart(true)
		return nil, types.CodeOK, nil
	})
	reg.RegisterFunc(types.CommandWarmReset, func(context.Context, *handlers.HandlerContext, []byte) ([]byte, types.CompletionCode, error) {
		ch.count(func() { ch.bmcWarmResets++ })
		restart(false)
		return nil, types.CodeOK, nil
	})
	srv := server.NewServer(b, pc, server.WithHandlerRegistry(reg), server.WithCipherSuites(suites))
	s := &Server{
		Endpoint:    bmc.Endpoint{Protocol: "ipmi", Host: "127.0.0.1", Port: conn.LocalAddr().(*net.UDPAddr).Port},
		Credentials: bmc.Credentials{Username: user, Password: pass},
		chassis:     ch,
		sel:         sel,
		sensors:     sensors,
		srv:         srv,
		conn:        pc,
		done:        make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		_ = srv.Serve(context.Background())
	}()
	return s, nil
}

// URL is the server's address as an ipmi:// URL.
func (s *Server) URL() string { return s.Endpoint.String() }

// Chassis is the simulated server's state.
func (s *Server) Chassis() *Chassis { return s.chassis }

// SEL is the BMC's System Event Log.
func (s *Server) SEL() *SEL { return s.sel }

// Sensors are the BMC's sensors and SDR repository.
func (s *Server) Sensors() *Sensors { return s.sensors }

// SetSilent makes the BMC drop every packet it receives (true) or answer
// again (false), as a BMC that rebooted or lost its network does. Sessions
// opened before stay valid.
func (s *Server) SetSilent(silent bool) { s.conn.silent.Store(silent) }

// Replayed is how many stale replies the BMC re-sent
// (Options.ReplayOldReplies).
func (s *Server) Replayed() int { return int(s.conn.replayed.Load()) }

// silenceableConn drops incoming packets while silent is set, and until
// the time in until (Unix nanoseconds; after a BMC reset). It also plays
// the wire-level personalities: the cipher suite downgrade (incoming Open
// Session Requests rewritten) and the replayed old-session reply (outgoing).
type silenceableConn struct {
	transport.PacketConn
	silent atomic.Bool
	until  atomic.Int64

	downgrade, replay bool
	replayed          atomic.Int64

	bmc            *gobmc.BMC
	clock          Clock
	sessionTimeout time.Duration
	seenMu         sync.Mutex
	seen           map[uint32]time.Time // RMCP+ session ID -> last request (Clock)
	mu             sync.Mutex
	last           []byte // the last in-session reply sent
	fresh          bool   // a session just opened: its first reply is preceded by a replay
}

func (c *silenceableConn) ReadFrom(buf []byte) (int, net.Addr, error) {
	for {
		n, addr, err := c.PacketConn.ReadFrom(buf)
		if err != nil {
			return n, addr, err
		}
		if c.silent.Load() || c.clock.Now().UnixNano() < c.until.Load() {
			continue
		}
		if c.downgrade {
			downgradeOpenSession(buf[:n])
		}
		if !c.admit(buf[:n], addr) {
			continue
		}
		return n, addr, err
	}
}

// RMCP+ framing: a 4-byte RMCP header, then auth type (06h), payload type,
// session ID, sequence number, payload length, payload (IPMI v2.0 13.6).
const (
	rmcpPlusPayload     = 16
	payloadIPMI         = 0x00
	payloadOpenSession  = 0x10
	payloadOpenSessResp = 0x11
	payloadRAKP2        = 0x13
	payloadRAKP4        = 0x15
)

func rmcpPlusType(pkt []byte) (int, bool) {
	if len(pkt) < rmcpPlusPayload || pkt[4] != 0x06 {
		return 0, false
	}
	return int(pkt[5] & 0x3f), true
}

// downgradeOpenSession rewrites an Open Session Request for suite 17's
// algorithms into one for suite 3's, in place.
func downgradeOpenSession(pkt []byte) {
	if typ, ok := rmcpPlusType(pkt); !ok || typ != payloadOpenSession || len(pkt) < rmcpPlusPayload+32 {
		return
	}
	p := pkt[rmcpPlusPayload:]
	a17, i17, c17, _ := types.GetCipherSuiteAlgorithms(types.CipherSuiteID17)
	a3, i3, c3, _ := types.GetCipherSuiteAlgorithms(types.CipherSuiteID3)
	// Algorithm payloads at 8, 16, 24; the algorithm is byte 4 of each.
	if types.AuthAlg(p[12]&0x3f) == a17 && types.IntegrityAlg(p[20]&0x3f) == i17 && types.CryptAlg(p[28]&0x3f) == c17 {
		p[12], p[20], p[28] = uint8(a3), uint8(i3), uint8(c3)
	}
}

func (c *silenceableConn) WriteTo(data []byte, addr net.Addr) (int, error) {
	rakp4IntegrityStatus(data)
	if c.replay {
		var stale []byte
		c.mu.Lock()
		if typ, ok := rmcpPlusType(data); ok {
			switch {
			case typ == payloadOpenSessResp || typ == payloadRAKP2 || typ == payloadRAKP4:
				stale = c.last
				c.fresh = typ == payloadRAKP4
			case typ == payloadIPMI && binary.LittleEndian.Uint32(data[6:10]) != 0:
				if c.fresh {
					stale, c.fresh = c.last, false
				}
				c.last = append([]byte(nil), data...)
			}
		}
		c.mu.Unlock()
		if stale != nil {
			if _, err := c.PacketConn.WriteTo(stale, addr); err == nil {
				c.replayed.Add(1)
			}
		}
	}
	return c.PacketConn.WriteTo(data, addr)
}

// Close stops the server and waits for its read loop to end. Idempotent.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		err = s.srv.Close()
		<-s.done
	})
	return err
}
