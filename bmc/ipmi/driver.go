package ipmi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/app"
	"github.com/bougou/go-ipmi/pkg/command/chassis"
	"github.com/bougou/go-ipmi/pkg/types"
	"github.com/go-logr/logr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/budget"
	"github.com/bmckit/bmckit/bmc/powerplan"
)

// Compile-time checks: the capabilities the driver offers.
var (
	_ bmc.Dialer             = (*Dialer)(nil)
	_ bmc.Driver             = (*Driver)(nil)
	_ bmc.BootOverrideSetter = (*Driver)(nil)
	_ bmc.BootOverrideGetter = (*Driver)(nil)
	_ bmc.BMCResetter        = (*Driver)(nil)
	_ bmc.StatsReporter      = (*Driver)(nil)
)

// Dialer opens IPMI v2.0 lanplus sessions. Register it for the "ipmi"
// protocol on a [bmc.SchemeDialer]. It is safe for concurrent use. It holds
// the per-endpoint request budgets (Options.RequestsPerSecond), so dial
// every session to a BMC through one Dialer.
type Dialer struct {
	opts    resolved
	budgets *budget.Set
}

// NewDialer validates opts and returns a Dialer. Errors name the offending
// Options field.
func NewDialer(opts Options) (*Dialer, error) {
	r, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	return &Dialer{opts: r, budgets: budget.NewSet(r.rps, r.burst)}, nil
}

// Dial implements [bmc.Dialer]; it returns a [*Driver].
func (d *Dialer) Dial(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) (bmc.Driver, error) {
	drv, err := d.Open(ctx, ep, creds)
	if err != nil {
		return nil, err
	}
	return drv, nil
}

// Open opens a session to the BMC at ep and returns the connected driver.
//
// The BMC URL may carry per-endpoint options in its query
// ([bmc.Endpoint.Options]), which override the Dialer's [Options] for this
// endpoint, e.g. ipmi://10.0.0.5:623?cipher=3&privilege=operator&bootReadBack=device:
//
//	cipher=17 or cipher=17,3   Options.CipherSuites (tried in order)
//	privilege=operator         Options.Privilege: administrator, operator, user
//	bootReadBack=device        Options.BootReadBack: full, device, none
//	timeout=5s                 Options.Timeout (a Go duration, > 0)
//
// Each may appear once; any other name, or another value, fails the dial
// with a permanent error naming the option, before any request.
//
// A wrong user name or password fails at once with an error wrapping
// [bmc.ErrUnauthorized]; a user name the BMC does not know (RAKP status
// 0Dh) also wraps [ErrUnknownUser] and names the user; an unreachable BMC fails with a transient error
// after at most (Retries+1)*Timeout, or when ctx ends.
func (d *Dialer) Open(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) (*Driver, error) {
	if ep.Protocol != "ipmi" {
		return nil, &bmc.OpError{Op: "dial", Endpoint: ep.String(), Err: bmc.Permanent(fmt.Errorf("ipmi driver cannot dial protocol %q", ep.Protocol))}
	}
	if err := checkCredentials(creds); err != nil {
		return nil, &bmc.OpError{Op: "dial", Endpoint: ep.String(), Err: err}
	}
	opts := d.opts
	if ep.Options != "" {
		var err error
		if opts, err = opts.withURLOptions(ep.Options); err != nil {
			return nil, &bmc.OpError{Op: "dial", Endpoint: ep.String(), Err: bmc.Permanent(err)}
		}
	}
	bg, release := d.budgets.Acquire(ep.Key())
	drv := &Driver{
		ep:      ep,
		epStr:   ep.Redacted(), // printed in errors and logs: no query
		creds:   creds,
		opts:    opts,
		budget:  bg,
		release: release,
		sem:     make(chan struct{}, 1),
		now:     time.Now,
	}
	if err := drv.login(ctx, drv.logger(ctx)); err != nil {
		release()
		return nil, &bmc.OpError{Op: "dial", Endpoint: drv.epStr, Err: err}
	}
	return drv, nil
}

// IPMI v2.0 limits (section 22.29 Set User Name, 22.30 Set User Password).
const (
	maxUserName = 16
	maxPassword = 20
)

// checkCredentials refuses credentials no IPMI BMC can hold: such a user
// cannot exist, so the error wraps bmc.ErrUnauthorized.
func checkCredentials(c bmc.Credentials) error {
	if len(c.Username) > maxUserName {
		return fmt.Errorf("%w: the user name is %d bytes; IPMI allows at most %d", bmc.ErrUnauthorized, len(c.Username), maxUserName)
	}
	if len(c.Password) > maxPassword {
		return fmt.Errorf("%w: the password is %d bytes; IPMI v2.0 allows at most %d", bmc.ErrUnauthorized, len(c.Password), maxPassword)
	}
	return nil
}

// Driver is one IPMI v2.0 (RMCP+) session to a BMC. Calls are serialized:
// IPMI sessions carry one outstanding request at a time. It implements
// [bmc.Driver], [bmc.BootOverrideSetter], [bmc.BootOverrideGetter],
// [bmc.BMCResetter], [bmc.StatsReporter], [bmc.InventoryReader],
// [bmc.HealthReader], [bmc.SystemStatusReader], [bmc.EventLogReader] and
// [bmc.EventLogClearer].
//
// Context: every go-ipmi call takes the caller's ctx; go-ipmi's UDP exchange
// returns as soon as ctx is done and caps each read at min(ctx deadline,
// Options.Timeout), so a call never outlives its ctx by more than the time
// to notice cancellation. Waiting for the connection's lock honours ctx too.
type Driver struct {
	ep    bmc.Endpoint
	epStr string
	creds bmc.Credentials
	opts  resolved
	now   func() time.Time

	budget  *budget.Budget // the endpoint's, shared through the Dialer; nil: unlimited
	release func()         // gives the budget back; idempotent

	// sem serializes calls; a channel rather than a mutex so waiting for it
	// honours ctx. The fields below are guarded by it.
	sem      chan struct{}
	c        *client.Client
	suite    types.CipherSuiteID
	lastUsed time.Time
	broken   bool // the last exchange got no usable reply: re-login first
	closed   bool
	sdr      sdrCache // the sensor records, for Health (sensors.go)

	requests, connections, logins atomic.Int64
	dropped                       atomic.Int64   // datagrams sessionConn dropped (stale or unexpected)
	sdrWalks                      atomic.Int64   // SDR repository reads (sensors.go)
	throttle                      budget.Counter // requests that waited for the budget, and how long
}

// Stats implements [bmc.StatsReporter]: IPMI requests sent (session setup
// included, resends not), UDP sockets opened, sessions established, and the
// requests that waited for the endpoint's request budget and for how long.
func (d *Driver) Stats() bmc.Stats {
	return bmc.Stats{
		Requests: d.requests.Load(), Connections: d.connections.Load(), Logins: d.logins.Load(),
		Throttled: d.throttle.Throttled(), ThrottleWait: d.throttle.ThrottleWait(),
	}
}

// send is the one gate every IPMI request passes before it goes out: it
// waits for the request's turn in the endpoint's budget, within ctx, and
// counts the request.
func (d *Driver) send(ctx context.Context) error {
	if err := d.throttle.Wait(ctx, d.budget); err != nil {
		return err
	}
	// The fence last, right before the datagram is written: a pause
	// anywhere before, the budget wait included, is caught here.
	if err := bmc.Admit(ctx); err != nil {
		return err
	}
	d.requests.Add(1)
	return nil
}

// CipherSuite is the cipher suite ID of the current session: the one the
// BMC negotiated, which is always one of those allowed (a BMC that answers
// a suite with other algorithms has that session dropped, and the next
// allowed suite is tried; see [ErrCipherSuiteMismatch]).
func (d *Driver) CipherSuite() int {
	d.sem <- struct{}{}
	defer func() { <-d.sem }()
	return int(d.suite)
}

func (d *Driver) logger(ctx context.Context) logr.Logger {
	if l, err := logr.FromContext(ctx); err == nil {
		return l
	}
	return d.opts.log
}

// do runs fn holding the connection, (re)opening the session first when it
// is missing, broken or idle too long, and wraps failures in *bmc.OpError.
func (d *Driver) do(ctx context.Context, op string, fn func(ctx context.Context, c *client.Client) error) error {
	fail := func(err error) error { return &bmc.OpError{Op: op, Endpoint: d.epStr, Err: err} }
	select {
	case d.sem <- struct{}{}:
	case <-ctx.Done():
		return fail(fmt.Errorf("waiting for the connection: %w", ctx.Err()))
	}
	defer func() { <-d.sem }()
	if d.closed {
		return fail(bmc.Permanent(errors.New("driver is closed")))
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	log := d.logger(ctx)
	if d.c != nil && d.broken {
		// The BMC did not answer on this session: logging it out would
		// only wait for another timeout.
		d.dropClient(d.c)
		d.c = nil
	} else if d.c != nil && d.now().Sub(d.lastUsed) > d.opts.idleRelogin {
		d.closeClient(ctx, d.c)
		d.c = nil
	}
	if d.c == nil {
		if err := d.login(ctx, log); err != nil {
			return fail(err)
		}
	}
	log.V(2).Info("ipmi request", "op", op, "endpoint", d.epStr)
	if err := fn(ctx, d.c); err != nil {
		return fail(err)
	}
	return nil
}

// exchange sends one request on the session, classifies a failure, and
// remembers whether the session needs re-opening. Callers hold d.sem.
func (d *Driver) exchange(ctx context.Context, c *client.Client, req types.Request, res types.Response) error {
	if err := d.send(ctx); err != nil {
		return err // nothing went out: the session is as good as before
	}
	err := c.Exchange(ctx, req, res)
	if err == nil {
		d.lastUsed = d.now()
		return nil
	}
	cerr, kind := classify(err)
	if kind == kindTransport {
		d.broken = true
	} else {
		d.lastUsed = d.now()
	}
	return cerr
}

// login opens a new session (callers have closed the old one), trying each
// configured cipher suite until the BMC accepts one. It stops at once on
// refused credentials or when the BMC does not answer. Callers hold d.sem
// (or own the driver exclusively, in Open).
//
// The RMCP+ handshake (Open Session, RAKP 1-4, Set Session Privilege Level)
// is driven here through go-ipmi's exported steps rather than its
// Client.Connect, because Connect flattens the causes of a failure into
// text (so a wrong password could not be told from an unsupported suite),
// first asks for the BMC's cipher suites (which ipmi_sim ignores), and
// starts a keep-alive goroutine that is not serialized with our calls.
func (d *Driver) login(ctx context.Context, log logr.Logger) error {
	var errs []error
	for _, suite := range d.opts.suites {
		c, err := client.NewClient(d.ep.Host, d.ep.EffectivePort(), d.creds.Username, d.creds.Password)
		if err != nil {
			// go-ipmi's message names the user name, never the password.
			return bmc.Permanent(fmt.Errorf("invalid credentials: %w", err))
		}
		c.WithCipherSuiteID(suite).
			WithMaxPrivilegeLevel(d.opts.privilege).
			WithTimeout(d.opts.timeout).
			WithRetry(d.opts.retries)
		c.WithUDPProxy(udpDialer{host: d.ep.Host, port: d.ep.EffectivePort(), consoleID: newConsoleID(), dropped: &d.dropped})
		d.connections.Add(1)
		err = d.handshake(ctx, c, suite)
		if err == nil {
			d.c, d.suite, d.broken, d.lastUsed = c, suite, false, d.now()
			d.logins.Add(1)
			log.V(1).Info("ipmi session opened", "endpoint", d.epStr, "cipherSuite", int(suite))
			return nil
		}
		d.dropClient(c)
		if errors.Is(err, bmc.ErrFenced) {
			return err // nothing was sent: no suite was refused
		}
		if errors.Is(err, ErrCipherSuiteMismatch) {
			// The BMC substituted other algorithms (pyghmi, older
			// firmwares answer 17 with 3's). They are never used: this
			// session is dropped, and the next suite the user allowed
			// gets a fresh one, as after a plain refusal.
			log.V(1).Info("ipmi cipher suite substituted by the BMC, trying the next", "endpoint", d.epStr, "cipherSuite", int(suite), "error", err.Error())
			errs = append(errs, fmt.Errorf("cipher suite %d: %w", suite, err))
			continue
		}
		cerr, _ := classify(err)
		if errors.Is(cerr, ErrUnknownUser) {
			// The user name is not a secret, and the one thing to fix.
			return fmt.Errorf("open session as user %q (cipher suite %d): %w", d.creds.Username, suite, cerr)
		}
		if errors.Is(cerr, bmc.ErrUnauthorized) || noAnswer(err) {
			return fmt.Errorf("open session (cipher suite %d): %w", suite, cerr)
		}
		log.V(1).Info("ipmi cipher suite refused", "endpoint", d.epStr, "cipherSuite", int(suite), "error", cerr.Error())
		errs = append(errs, fmt.Errorf("cipher suite %d: %w", suite, cerr))
	}
	err := errors.Join(errs...)
	if errors.Is(err, ErrCipherSuiteMismatch) {
		// Refusing substituted algorithms is permanent: asking again
		// gets the same answer.
		return bmc.Permanent(fmt.Errorf("open session: no cipher suite of %v could be negotiated as asked for (Options.CipherSuites or ?cipher= lists the suites allowed): %w", suiteList(d.opts.suites), err))
	}
	return fmt.Errorf("open session: the BMC accepted none of the cipher suites %v (Options.CipherSuites or ?cipher= lists the suites allowed): %w", suiteList(d.opts.suites), err)
}

func (d *Driver) handshake(ctx context.Context, c *client.Client, suite types.CipherSuiteID) error {
	if err := d.send(ctx); err != nil {
		return err
	}
	res, err := c.OpenSession(ctx)
	if err != nil {
		return err
	}
	// go-ipmi adopts whatever algorithms the BMC answers with; the
	// session must use exactly the suite asked for.
	if err := checkAlgorithms(suite, res.AuthAlg, res.IntegrityAlg, res.CryptAlg); err != nil {
		return err
	}
	if err := d.send(ctx); err != nil {
		return err
	}
	if _, err := c.RAKPMessage1(ctx); err != nil {
		return err
	}
	if err := d.send(ctx); err != nil {
		return err
	}
	if _, err := c.RAKPMessage3(ctx); err != nil {
		return err
	}
	if err := d.send(ctx); err != nil {
		return err
	}
	if _, err := c.SetSessionPrivilegeLevel(ctx, d.opts.privilege); err != nil {
		return fmt.Errorf("set session privilege level %s: %w", d.opts.privilege, err)
	}
	return nil
}

// noAnswer reports whether err means the BMC did not answer at all (as
// opposed to answering with a refusal), so trying another suite is futile.
func noAnswer(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// closeClient logs the session out (bounded by one request timeout) and
// closes its socket, in the background: go-ipmi's socket close waits for a
// read still pending from a request whose ctx ended (up to Options.Timeout),
// and the caller need not wait for that. It returns when the logout is done
// or ctx ends.
func (d *Driver) closeClient(ctx context.Context, c *client.Client) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.opts.timeout)
		defer cancel()
		if d.send(cctx) != nil {
			// No turn in the budget within a request timeout: close the
			// socket without the logout; the BMC expires the session.
			cancel()
		}
		_ = c.Close(cctx)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// dropClient closes a client's socket without a logout request, for
// handshakes that failed (there is no session to close, and an unreachable
// BMC would only make the logout wait for its timeout). Like closeClient it
// does not wait for a pending read.
func (d *Driver) dropClient(c *client.Client) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	go func() { _ = c.Close(ctx) }()
}

// Close logs out and closes the socket. It is idempotent. If ctx ends while
// another call holds the connection, Close returns ctx's error and the
// session is closed as soon as that call returns.
func (d *Driver) Close(ctx context.Context) error {
	closeLocked := func(ctx context.Context) {
		defer func() { <-d.sem }()
		if d.closed {
			return
		}
		d.closed = true
		if d.c != nil {
			d.closeClient(ctx, d.c)
			d.c = nil
			d.logger(ctx).V(1).Info("ipmi session closed", "endpoint", d.epStr)
		}
		d.release()
	}
	select {
	case d.sem <- struct{}{}:
		closeLocked(ctx)
		return nil
	case <-ctx.Done():
		go func() {
			d.sem <- struct{}{}
			closeLocked(context.WithoutCancel(ctx))
		}()
		return &bmc.OpError{Op: "close", Endpoint: d.epStr, Err: fmt.Errorf("waiting for the connection: %w", ctx.Err())}
	}
}

// PowerState implements [bmc.Driver] with one Get Chassis Status request.
// IPMI has no transitional states: the result is PowerOn or PowerOff.
func (d *Driver) PowerState(ctx context.Context) (bmc.PowerState, error) {
	state := bmc.PowerUnknown
	err := d.do(ctx, "power status", func(ctx context.Context, c *client.Client) error {
		var err error
		state, err = d.powerState(ctx, c)
		return err
	})
	return state, err
}

func (d *Driver) powerState(ctx context.Context, c *client.Client) (bmc.PowerState, error) {
	st, err := d.chassisStatus(ctx, c)
	return st.power, err
}

// chassisStatus sends Get Chassis Status: the one request behind
// PowerState, SystemStatus and Health.
func (d *Driver) chassisStatus(ctx context.Context, c *client.Client) (chassisStatus, error) {
	var raw rawResponse
	if err := d.exchange(ctx, c, &chassis.GetChassisStatusRequest{}, &raw); err != nil {
		return chassisStatus{power: bmc.PowerUnknown}, err
	}
	st, err := decodeChassisStatus(raw.data)
	if err != nil {
		return chassisStatus{power: bmc.PowerUnknown}, bmc.Permanent(err)
	}
	return st, nil
}

// SetPower implements [bmc.Driver]. It reads the power state, then sends
// the one Chassis Control request the action needs from there (see package
// powerplan): nothing when the server is already there, power up for cycle
// or reset on a server that is off, else power down / soft shutdown / power
// cycle / hard reset.
func (d *Driver) SetPower(ctx context.Context, action bmc.PowerAction) error {
	if !action.Valid() {
		_, err := powerplan.Plan(bmc.PowerUnknown, action)
		return &bmc.OpError{Op: "power " + string(action), Endpoint: d.epStr, Err: bmc.Permanent(err)}
	}
	return d.do(ctx, "power "+string(action), func(ctx context.Context, c *client.Client) error {
		state, err := d.powerState(ctx, c)
		if err != nil {
			return fmt.Errorf("read power state first: %w", err)
		}
		step, err := powerplan.Plan(state, action)
		if err != nil {
			return bmc.Permanent(err)
		}
		var ctl chassis.ChassisControl
		switch step {
		case powerplan.StepNone:
			return nil
		case powerplan.StepOn:
			ctl = chassis.ChassisControlPowerUp
		case powerplan.StepOff:
			ctl = chassis.ChassisControlPowerDown
		case powerplan.StepSoftOff:
			ctl = chassis.ChassisControlSoftShutdown
		case powerplan.StepCycle:
			ctl = chassis.ChassisControlPowerCycle
		case powerplan.StepReset:
			ctl = chassis.ChassisControlHardReset
		}
		if err := d.exchange(ctx, c, &chassis.ChassisControlRequest{ChassisControl: ctl}, &chassis.ChassisControlResponse{}); err != nil {
			return fmt.Errorf("chassis control %s (server was %s): %w", step, state, err)
		}
		return nil
	})
}

// SetBootOverride implements [bmc.BootOverrideSetter] with Set System Boot
// Options parameter 5 (boot flags), the valid bit set. BootDeviceNone clears
// the override. BootModeUnchanged keeps the BMC's current EFI/legacy bit
// (read first; legacy when the BMC cannot report it). BootDeviceUEFIHTTP has
// no IPMI equivalent and fails with [bmc.ErrNotSupported].
func (d *Driver) SetBootOverride(ctx context.Context, o bmc.BootOverride) error {
	op := "set boot override " + string(o.Device)
	sel, err := selectorFromDevice(o.Device)
	if err == nil && o.Mode != bmc.BootModeUnchanged && o.Mode != bmc.BootModeUEFI && o.Mode != bmc.BootModeLegacy {
		err = fmt.Errorf("invalid boot mode %q: want uefi, legacy or empty (unchanged)", o.Mode)
	}
	if err == nil && o.URI != "" {
		err = fmt.Errorf("boot device %q with a URI: only %q boots from a URI", o.Device, bmc.BootDeviceUEFIHTTP)
	}
	if err != nil {
		if !errors.Is(err, bmc.ErrNotSupported) {
			err = bmc.Permanent(err)
		}
		return &bmc.OpError{Op: op, Endpoint: d.epStr, Err: err}
	}
	return d.do(ctx, op, func(ctx context.Context, c *client.Client) error {
		efi := o.Mode == bmc.BootModeUEFI
		if o.Mode == bmc.BootModeUnchanged && o.Device != bmc.BootDeviceNone {
			cur, err := d.bootFlags(ctx, c)
			switch {
			case err == nil:
				efi = cur.BootFlagsValid && cur.BIOSBootType == types.BIOSBootTypeEFI
			case errors.Is(err, bmc.ErrNotSupported):
			default:
				return fmt.Errorf("read current boot mode: %w", err)
			}
		}
		flags := &types.BootOptionParam_BootFlags{
			BootFlagsValid:     true,
			Persist:            o.Persistent,
			BIOSBootType:       types.BIOSBootType(efi),
			BootDeviceSelector: sel,
		}
		req := &chassis.SetSystemBootOptionsParamRequest{
			ParamSelector: types.BootOptionParamSelector_BootFlags,
			ParamData:     flags.Pack(),
		}
		return d.exchange(ctx, c, req, &chassis.SetSystemBootOptionsParamResponse{})
	})
}

// BootOverride implements [bmc.BootOverrideGetter] with Get System Boot
// Options parameter 5. A flag set without the valid bit reads as
// BootDeviceNone. With boot read-back none (Options.BootReadBack,
// NoBootReadBack, or bootReadBack=none in the URL) it fails with
// [bmc.ErrNotSupported] without a request; with device, the mode reads as
// bmc.BootModeUnchanged (not verified).
func (d *Driver) BootOverride(ctx context.Context) (bmc.BootOverride, error) {
	var o bmc.BootOverride
	if d.opts.readBack == BootReadBackNone {
		return o, &bmc.OpError{Op: "get boot override", Endpoint: d.epStr, Err: fmt.Errorf("this BMC does not report boot flags as set (boot read-back is off: Options.BootReadBack or bootReadBack=none): %w", bmc.ErrNotSupported)}
	}
	err := d.do(ctx, "get boot override", func(ctx context.Context, c *client.Client) error {
		raw, err := d.bootFlagsRaw(ctx, c)
		if err != nil {
			return err
		}
		o, err = decodeBootFlags(raw)
		if err != nil {
			return bmc.Permanent(err)
		}
		if d.opts.readBack == BootReadBackDevice {
			o.Mode = bmc.BootModeUnchanged // not reported reliably by this BMC
		}
		return nil
	})
	return o, err
}

func (d *Driver) bootFlagsRaw(ctx context.Context, c *client.Client) ([]byte, error) {
	var raw rawResponse
	req := &chassis.GetSystemBootOptionsParamRequest{ParamSelector: types.BootOptionParamSelector_BootFlags}
	if err := d.exchange(ctx, c, req, &raw); err != nil {
		return nil, err
	}
	return raw.data, nil
}

func (d *Driver) bootFlags(ctx context.Context, c *client.Client) (*types.BootOptionParam_BootFlags, error) {
	raw, err := d.bootFlagsRaw(ctx, c)
	if err != nil {
		return nil, err
	}
	if len(raw) < 7 {
		return nil, bmc.Permanent(fmt.Errorf("decode boot flags: reply has %d bytes, want 7", len(raw)))
	}
	var f types.BootOptionParam_BootFlags
	if err := f.Unpack(raw[2:7]); err != nil {
		return nil, bmc.Permanent(fmt.Errorf("decode boot flags: %w", err))
	}
	return &f, nil
}

// ResetBMC implements [bmc.BMCResetter] with the App Cold Reset / Warm Reset
// commands. The session does not survive a BMC reset; the next call opens a
// new one. BMCs without the command (ipmi_sim) fail with
// [bmc.ErrNotSupported].
func (d *Driver) ResetBMC(ctx context.Context, t bmc.BMCResetType) error {
	op := "reset BMC " + string(t)
	var req types.Request
	var res types.Response
	switch t {
	case bmc.BMCResetCold:
		req, res = &app.ColdResetRequest{}, &app.ColdResetResponse{}
	case bmc.BMCResetWarm:
		req, res = &app.WarmResetRequest{}, &app.WarmResetResponse{}
	default:
		return &bmc.OpError{Op: op, Endpoint: d.epStr, Err: bmc.Permanent(fmt.Errorf("invalid BMC reset type %q: want warm or cold", t))}
	}
	return d.do(ctx, op, func(ctx context.Context, c *client.Client) error {
		if err := d.exchange(ctx, c, req, res); err != nil {
			return err
		}
		// The session does not survive the reset: drop it without a
		// logout, the next call opens a new one.
		d.dropClient(c)
		d.c = nil
		return nil
	})
}

// suiteList formats suite IDs as "17, 3".
func suiteList(ids []types.CipherSuiteID) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d", id)
	}
	return b.String()
}
