package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
)

// simulation is what -simulate runs against: a simulated Redfish BMC with
// one system, powered on, and a boot tracker for that system's server. It
// is the job's BootTracker (the embedded bootstate.Tracker, so the optional
// job.BootPolicyStarter and job.BootOutcomeReporter are there too), and it
// plays the server's part: when the BMC accepts a reset that powers the
// system on while a boot attempt is open, the server "boots" once the
// power change landed and reports bootstate.SignalBootStateReceived for the
// attempt, as a booted server's callback to POST /bootstate would.
type simulation struct {
	*bootstate.Tracker
	srv   *redfishtest.Server
	delay time.Duration // how long a power change takes to land
	// images serves firmware images the simulated BMC installs
	// (imageURL), on loopback.
	images *httptest.Server

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	attempts map[string]string // system UUID -> its open boot attempt
}

var (
	_ job.BootTracker         = (*simulation)(nil)
	_ job.BootPolicyStarter   = (*simulation)(nil)
	_ job.BootOutcomeReporter = (*simulation)(nil)
)

// bootingResets are the reset types after which a system runs (and so
// boots); the others turn it off or, like PushPowerButton, depend on its
// state.
var bootingResets = map[string]bool{"On": true, "ForceOn": true, "PowerCycle": true, "ForceRestart": true, "GracefulRestart": true}

func startSimulation(powerDelay time.Duration) (*simulation, error) {
	tr, err := bootstate.NewTracker(bootstate.Config{Store: memstore.New(), InsecureSkipAuth: true})
	if err != nil {
		return nil, err
	}
	s := &simulation{Tracker: tr, delay: powerDelay, attempts: map[string]string{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	// Firmware updates take twice a power change and, like a BIOS update on
	// a real server, take effect when the system next boots (the task's
	// reset).
	s.srv = redfishtest.NewTLSServer(redfishtest.Config{PowerDelay: powerDelay, OnStateChange: s.stateChanged,
		Firmware: redfishtest.FirmwareConfig{Duration: 2 * powerDelay, ActivateOnReset: true}})
	s.srv.SetPower("1", "On")
	s.images = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		_, _ = w.Write(redfishtest.FirmwareImage(q.Get("component"), q.Get("version")))
	}))
	return s, nil
}

// imageURL is where the simulated BMC fetches an image that installs
// version on component.
func (s *simulation) imageURL(component, version string) string {
	return s.images.URL + "/firmware.bin?" + url.Values{"component": {component}, "version": {version}}.Encode()
}

// StartBoot opens the attempt (bootstate.Tracker.StartBoot) and remembers
// it as the one the simulated server reports its next boot to.
func (s *simulation) StartBoot(ctx context.Context, systemUUID, attemptID string, timeout time.Duration) error {
	if err := s.Tracker.StartBoot(ctx, systemUUID, attemptID, timeout); err != nil {
		return err
	}
	s.open(systemUUID, attemptID)
	return nil
}

// StartBootWithPolicy is StartBoot with the task's policy.
func (s *simulation) StartBootWithPolicy(ctx context.Context, systemUUID, attemptID string, p job.BootAttemptPolicy) error {
	if err := s.Tracker.StartBootWithPolicy(ctx, systemUUID, attemptID, p); err != nil {
		return err
	}
	s.open(systemUUID, attemptID)
	return nil
}

func (s *simulation) open(systemUUID, attemptID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts[strings.ToLower(systemUUID)] = attemptID
}

// stateChanged is the simulator's OnStateChange: a reset that powers the
// system on makes the server boot once the change landed.
func (s *simulation) stateChanged(c redfishtest.StateChange) {
	reset, ok := strings.CutPrefix(c.What, "reset:")
	if !ok || c.Note != "" || !bootingResets[reset] {
		return
	}
	s.mu.Lock()
	open := make(map[string]string, len(s.attempts))
	for u, a := range s.attempts {
		open[u] = a
	}
	s.mu.Unlock()
	if len(open) == 0 {
		return // nobody waits for this boot
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(s.delay):
		}
		for u, a := range open {
			// An attempt that ended or was replaced meanwhile refuses the
			// signal; a real server's late callback gets the same answer.
			_, _ = s.RecordSignal(s.ctx, u, a, bootstate.SignalBootStateReceived, "simulated server booted")
		}
	}()
}

// close stops the simulated server and its pending boots.
func (s *simulation) close() {
	s.cancel()
	s.wg.Wait()
	s.srv.Close()
	s.images.Close()
}
