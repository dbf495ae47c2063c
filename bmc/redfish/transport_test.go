package redfish_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
)

type traceKey struct{}

// headerTransport copies the trace value of each request's ctx into a
// header, as a tracing transport (otelhttp) propagates its span.
type headerTransport struct{ next http.RoundTripper }

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if v, ok := req.Context().Value(traceKey{}).(string); ok {
		req = req.Clone(req.Context())
		req.Header.Set("X-Trace", v)
	}
	return t.next.RoundTrip(req)
}

// recordingProxy forwards to the simulator and records the X-Trace header
// of every request it sees.
type recordingProxy struct {
	mu   sync.Mutex
	seen []string // "METHOD path trace"
}

func (p *recordingProxy) start(t *testing.T, target string) *httptest.Server {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("X-Trace"))
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (p *recordingProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

func TestWrapTransportSeesEveryRequestWithItsCtx(t *testing.T) {
	sim := redfishtest.NewServer(redfishtest.Config{})
	t.Cleanup(sim.Close)
	var proxy recordingProxy
	front := proxy.start(t, sim.URL())
	ep, err := bmc.ParseEndpoint("redfish+http://" + strings.TrimPrefix(front.URL, "http://") + "/redfish/v1/Systems/1")
	if err != nil {
		t.Fatal(err)
	}
	opts := testOptions()
	wraps := 0
	opts.WrapTransport = func(next http.RoundTripper) http.RoundTripper {
		wraps++
		return headerTransport{next: next}
	}
	with := func(v string) context.Context { return context.WithValue(context.Background(), traceKey{}, v) }

	drv, err := redfish.NewDialer(opts).DialDriver(with("dial"), ep, sim.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drv.PowerState(with("read")); err != nil {
		t.Fatal(err)
	}
	if err := drv.SetPower(with("power"), bmc.PowerActionOn); err != nil {
		t.Fatal(err)
	}
	sent := drv.Stats().Requests
	if err := drv.Close(with("close")); err != nil {
		t.Fatal(err)
	}

	sys := "/redfish/v1/Systems/1"
	want := []string{
		"GET /redfish/v1/ dial", // gofish asks for the root with a slash
		"POST /redfish/v1/SessionService/Sessions dial",
		"GET " + sys + " dial",
		"GET " + sys + " read",
		"GET " + sys + " power",
		"POST " + sys + "/Actions/ComputerSystem.Reset power",
		"DELETE /redfish/v1/SessionService/Sessions/",
	}
	got := proxy.requests()
	if len(got) != len(want) {
		t.Fatalf("the BMC saw %d requests %q, want %d", len(got), got, len(want))
	}
	for i := range want {
		w := want[i]
		if strings.HasPrefix(w, "DELETE") {
			if !strings.HasPrefix(got[i], w) || !strings.HasSuffix(got[i], " close") {
				t.Errorf("request %d = %q, want the logout with trace close", i, got[i])
			}
			continue
		}
		if !strings.HasPrefix(w, "GET /redfish/v1/ ") {
			if got[i] != w {
				t.Errorf("request %d = %q, want %q", i, got[i], w)
			}
			continue
		}
		if got[i] != w && got[i] != "GET /redfish/v1 dial" {
			t.Errorf("request %d = %q, want the service root with trace dial", i, got[i])
		}
	}
	if int(sent) != len(got)-1 {
		t.Errorf("Stats counted %d requests before Close; the BMC saw %d (plus the logout)", sent, len(got)-1)
	}
	if wraps != 1 {
		t.Errorf("WrapTransport called %d times for one Dial, want 1", wraps)
	}
}
