package prometheus_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmcevents"
	bmcprom "github.com/bmckit/bmckit/contrib/prometheus"
	"github.com/bmckit/bmckit/storage/memstore"
)

// TestEventMetrics: pushes to a real Receiver over HTTP, one re-sent and
// one with a wrong token, are counted by severity, as duplicates and as
// refusals, and the token is in no label.
func TestEventMetrics(t *testing.T) {
	m := bmcprom.New(bmcprom.Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	secret := []byte("prometheus-events-secret-0123456")
	rcv, err := bmcevents.NewReceiver(bmcevents.Config{Store: memstore.New(), Secret: secret, Observer: m.EventObserver()})
	require.NoError(t, err)
	hs := httptest.NewServer(rcv)
	defer hs.Close()
	dest, err := bmcevents.Destination(hs.URL+"/bmc-events", secret, "bmc-1")
	require.NoError(t, err)
	push := func(url, body string) int {
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	body := `{"Events":[{"EventId":"1","MessageSeverity":"Critical","MessageId":"Base.1.0.X","OriginOfCondition":{"@odata.id":"/redfish/v1/Systems/1"}},` +
		`{"EventId":"2","MessageSeverity":"OK"}]}`
	assert.Equal(t, 200, push(dest, body))
	assert.Equal(t, 200, push(dest, body)) // the BMC's retry: both duplicates
	assert.Equal(t, 401, push(hs.URL+"/bmc-events/bmc-1/wrong", body))
	assert.Equal(t, 400, push(dest, `{"Events":[]}`))

	ms := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer ms.Close()
	fams := scrape(t, ms.URL)
	assert.Equal(t, 1.0, value(fams, "bmckit_bmc_events_total", "severity=Critical", "via=push"))
	assert.Equal(t, 1.0, value(fams, "bmckit_bmc_events_total", "severity=OK", "via=push"))
	assert.Equal(t, 2.0, value(fams, "bmckit_bmc_event_duplicates_total", "via=push"))
	assert.Equal(t, 1.0, value(fams, "bmckit_bmc_event_pushes_refused_total", "status=401"))
	assert.Equal(t, 1.0, value(fams, "bmckit_bmc_event_pushes_refused_total", "status=400"))
	tok := dest[strings.LastIndexByte(dest, '/')+1:]
	for name, f := range fams {
		for _, s := range f.GetMetric() {
			for _, lp := range s.GetLabel() {
				assert.NotContains(t, lp.GetValue(), tok, "metric %s carries the token", name)
			}
		}
	}
}
