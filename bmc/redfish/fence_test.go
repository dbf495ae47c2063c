package redfish_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/bmctest"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

// A request refused by the fence never reaches the BMC, whatever the
// method: a power change, a boot override, a read; and the session stays
// usable for a caller whose fence admits.
func TestFencedRequestsNeverReachTheBMC(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.Config{}, testOptions(), "1", false)
	srv.SetPower("1", "On")
	f := bmctest.ClosedFence()
	ctx := bmc.WithFence(context.Background(), f)
	srv.ClearRequests()
	calls := map[string]error{
		"SetPower":        drv.SetPower(ctx, bmc.PowerActionOff),
		"SetBootOverride": drv.SetBootOverride(ctx, bmc.BootOverride{Device: bmc.BootDevicePXE}),
	}
	_, calls["PowerState"] = drv.PowerState(ctx)
	for name, err := range calls {
		if !errors.Is(err, bmc.ErrFenced) {
			t.Errorf("%s under a closed fence: %v, want ErrFenced", name, err)
		}
	}
	if reqs := srv.Requests(); len(reqs) != 0 {
		t.Fatalf("the BMC received %d requests from fenced calls:\n%s", len(reqs), trace(reqs))
	}
	if st := srv.System("1"); st.Power != "On" {
		t.Fatalf("power %s after a fenced power off", st.Power)
	}
	if _, err := drv.PowerState(context.Background()); err != nil {
		t.Fatalf("the session after fenced calls: %v", err)
	}
}

// BenchmarkFenceWindow measures the window a pause can still use: from the
// fence's last admission of a request (bmc.Admit at the socket) to the
// request's arrival at the simulator over loopback, for status reads on a
// kept-alive connection. Reported as window-p50/p99/max in µs.
func BenchmarkFenceWindow(b *testing.B) {
	srv := redfishtest.NewServer(redfishtest.Config{})
	b.Cleanup(srv.Close)
	srv.SetPower("1", "On")
	dialer := redfish.NewDialer(testOptions())
	drv, err := dialer.DialDriver(context.Background(), srv.Endpoint("1"), srv.Credentials())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = drv.Close(context.Background()) })
	f := &bmctest.Fence{}
	ctx := bmc.WithFence(context.Background(), f)
	srv.ClearRequests()
	b.ResetTimer()
	for b.Loop() {
		if _, err := drv.PowerState(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reqs := srv.Requests()
	admitted := f.Admitted()
	// Two admissions per request: the transport's, then the socket's
	// (fencedconn.go), the last before the bytes are written.
	if 2*len(reqs) != len(admitted) {
		b.Fatalf("%d requests arrived, %d admissions (want 2 each)", len(reqs), len(admitted))
	}
	w := make([]time.Duration, len(reqs))
	for i := range reqs {
		w[i] = reqs[i].Time.Sub(admitted[2*i+1])
	}
	slices.Sort(w)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(w[len(w)/2]), "window-p50-µs")
	b.ReportMetric(us(w[len(w)*99/100]), "window-p99-µs")
	b.ReportMetric(us(w[len(w)-1]), "window-max-µs")
}

// The event stream's opening request takes the fence too (it has a
// transport of its own).
func TestFencedEventStreamIsNotOpened(t *testing.T) {
	srv, drv := dialSim(t, redfishtest.Config{EventStream: true}, testOptions(), "1", false)
	// A first watch, unfenced, finds the stream's URI; the BMC then breaks
	// the stream, so the next watch opens one through the stream's own
	// transport.
	ended := make(chan struct{})
	var once sync.Once
	stop, err := drv.WatchPower(context.Background(), func(ev bmc.PowerEvent) {
		if ev.Err != nil {
			once.Do(func() { close(ended) })
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.BreakEventStreams()
	select {
	case <-ended:
	case <-time.After(time.Minute):
		t.Fatal("the broken stream was not reported")
	}
	stop()
	ctx := bmc.WithFence(context.Background(), bmctest.ClosedFence())
	srv.ClearRequests()
	stop, err = drv.WatchPower(ctx, func(bmc.PowerEvent) {})
	if err == nil {
		stop()
		t.Fatal("WatchPower under a closed fence opened a stream")
	}
	if !errors.Is(err, bmc.ErrFenced) {
		t.Fatalf("WatchPower under a closed fence: %v, want ErrFenced", err)
	}
	if reqs := srv.Requests(); len(reqs) != 0 {
		t.Fatalf("the BMC received %d requests:\n%s", len(reqs), trace(reqs))
	}
}

// lapsingFence admits its first request and nothing after: a lease that
// lapses between the transport's check and the socket (a request waiting
// for a connection of the session, or for its dial).
type lapsingFence struct {
	mu sync.Mutex
	n  int
}

func (f *lapsingFence) Admit() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.n == 1 {
		return nil
	}
	return fmt.Errorf("test fence lapsed: %w", bmc.ErrFenced)
}

// The fence is asked again at the socket: a request admitted by the
// transport whose lease lapses before its bytes are written is never
// written, over plain HTTP and over TLS (the check sits under TLS).
func TestFenceCheckedAgainAtTheSocket(t *testing.T) {
	for _, tlsServer := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tlsServer), func(t *testing.T) {
			srv, drv := dialSim(t, redfishtest.Config{}, testOptions(), "1", tlsServer)
			srv.ClearRequests()
			f := &lapsingFence{}
			_, err := drv.PowerState(bmc.WithFence(context.Background(), f))
			if !errors.Is(err, bmc.ErrFenced) {
				t.Fatalf("PowerState whose lease lapsed before the write: %v, want ErrFenced", err)
			}
			if f.n < 2 {
				t.Fatalf("the fence was asked %d times; want the transport's and the socket's", f.n)
			}
			if reqs := srv.Requests(); len(reqs) != 0 {
				t.Fatalf("the BMC received %d requests:\n%s", len(reqs), trace(reqs))
			}
			if _, err := drv.PowerState(context.Background()); err != nil {
				t.Fatalf("the session afterwards: %v", err)
			}
		})
	}
}
