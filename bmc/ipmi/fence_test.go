package ipmi_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/bmctest"
	"github.com/bmckit/bmckit/bmc/ipmi"
	"github.com/bmckit/bmckit/bmc/ipmi/ipmitest"
)

// relay forwards datagrams between one client and the simulator on
// 127.0.0.1, noting when each datagram from the client arrived.
type relay struct {
	conn *net.UDPConn
	mu   sync.Mutex
	seen []time.Time
}

func startRelay(t testing.TB, to bmc.Endpoint) (*relay, bmc.Endpoint) {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	up, err := net.Dial("udp", net.JoinHostPort(to.Host, fmt.Sprint(to.EffectivePort())))
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{conn: conn}
	var client struct {
		sync.Mutex
		addr *net.UDPAddr
	}
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := conn.ReadFromUDP(buf)
			if err != nil {
				return
			}
			r.mu.Lock()
			r.seen = append(r.seen, time.Now())
			r.mu.Unlock()
			client.Lock()
			client.addr = from
			client.Unlock()
			_, _ = up.Write(buf[:n])
		}
	}()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, err := up.Read(buf)
			if err != nil {
				return
			}
			client.Lock()
			to := client.addr
			client.Unlock()
			if to != nil {
				_, _ = conn.WriteToUDP(buf[:n], to)
			}
		}
	}()
	t.Cleanup(func() { _ = conn.Close(); _ = up.Close() })
	ep := to
	ep.Host, ep.Port = "127.0.0.1", conn.LocalAddr().(*net.UDPAddr).Port
	return r, ep
}

func (r *relay) arrivals() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// A request refused by the fence never reaches the BMC: no datagram leaves,
// for a power change or a read, and the session stays usable.
func TestFencedRequestsNeverReachTheBMC(t *testing.T) {
	sim := ipmitest.NewServer(t, ipmitest.Options{PoweredOn: true})
	r, ep := startRelay(t, sim.Endpoint)
	drv, err := dialer(t, ipmi.Options{RequestsPerSecond: -1}).Open(context.Background(), ep, sim.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Close(context.Background()) })
	before := len(r.arrivals())
	ctx := bmc.WithFence(context.Background(), bmctest.ClosedFence())
	if err := drv.SetPower(ctx, bmc.PowerActionOff); !errors.Is(err, bmc.ErrFenced) {
		t.Errorf("SetPower under a closed fence: %v, want ErrFenced", err)
	}
	if _, err := drv.PowerState(ctx); !errors.Is(err, bmc.ErrFenced) {
		t.Errorf("PowerState under a closed fence: %v, want ErrFenced", err)
	}
	if n := len(r.arrivals()) - before; n != 0 {
		t.Fatalf("%d datagrams reached the BMC from fenced calls", n)
	}
	if !sim.Chassis().PoweredOn() {
		t.Fatal("powered off by a fenced call")
	}
	if _, err := drv.PowerState(context.Background()); err != nil {
		t.Fatalf("the session after fenced calls: %v", err)
	}
}

// BenchmarkFenceWindow measures the window a pause can still use: from the
// fence's admission of a request (bmc.Admit before the exchange) to the
// datagram's arrival at a relay in front of the simulator, on loopback.
func BenchmarkFenceWindow(b *testing.B) {
	sim := ipmitest.NewServer(b, ipmitest.Options{PoweredOn: true})
	r, ep := startRelay(b, sim.Endpoint)
	drv, err := dialer(b, ipmi.Options{RequestsPerSecond: -1}).Open(context.Background(), ep, sim.Credentials)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = drv.Close(context.Background()) })
	f := &bmctest.Fence{}
	ctx := bmc.WithFence(context.Background(), f)
	skip := len(r.arrivals())
	for b.Loop() {
		if _, err := drv.PowerState(ctx); err != nil {
			b.Fatal(err)
		}
	}
	seen := r.arrivals()[skip:]
	admitted := f.Admitted()
	if len(seen) != len(admitted) {
		b.Fatalf("%d datagrams arrived, %d admitted", len(seen), len(admitted))
	}
	w := make([]time.Duration, len(seen))
	for i := range seen {
		w[i] = seen[i].Sub(admitted[i])
	}
	slices.Sort(w)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(w[len(w)/2]), "window-p50-µs")
	b.ReportMetric(us(w[len(w)*99/100]), "window-p99-µs")
	b.ReportMetric(us(w[len(w)-1]), "window-max-µs")
}
