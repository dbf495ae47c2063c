package prometheus_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/bmcevents"
	"github.com/bmckit/bmckit/bootstate"
	"github.com/bmckit/bmckit/clock"
	bmcprom "github.com/bmckit/bmckit/contrib/prometheus"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/jobtest"
	"github.com/bmckit/bmckit/job/observe"
	"github.com/bmckit/bmckit/monitor"
	"github.com/bmckit/bmckit/rollout"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/task"
)

const password = "s3cret-pw"

// scrape fetches url over HTTP and parses the text exposition.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// value is the counter or gauge value, or the histogram's sample count, of
// the series of family name whose labels are exactly labels (k=v pairs);
// -1 if there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	want := strings.Join(labels, ",")
	for _, m := range f.GetMetric() {
		var got []string
		for _, lp := range m.GetLabel() {
			got = append(got, lp.GetName()+"="+lp.GetValue())
		}
		sort.Strings(got)
		if strings.Join(got, ",") != want {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return -1
}

func TestScrapeRunnerAndTracker(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := bmcprom.New(bmcprom.Options{})
	reg.MustRegister(m)

	// A real Runner on memstore against fake BMCs: a netboot on Redfish, a
	// power-status read over IPMI, and a job whose login is refused.
	fleet := fake.NewFleet()
	const rf, ipmi, refusing = "redfish://10.0.0.1/redfish/v1/Systems/1", "ipmi://10.0.0.2", "redfish://10.0.0.3/redfish/v1/Systems/1"
	add := func(url string) *fake.BMC {
		b, err := fleet.AddNew(url, fake.Options{Power: bmc.PowerOn, Username: "admin", Password: password})
		require.NoError(t, err)
		return b
	}
	bRF, bIPMI := add(rf), add(ipmi)
	add(refusing)
	store := memstore.New()
	specs := map[string]job.Spec{
		"netboot": {BMC: rf, CredentialsRef: "lab", Tasks: []task.Spec{
			{Power: &task.PowerAction{Op: task.PowerOff}},
			{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}},
			{Power: &task.PowerAction{Op: task.PowerOn}},
		}},
		"status":  {BMC: ipmi, CredentialsRef: "lab", Tasks: []task.Spec{{PowerStatus: &task.PowerStatusAction{}}}},
		"refused": {BMC: refusing, CredentialsRef: "old", Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOn}}}},
	}
	// RunAll stops the runner: connections closed, their traffic reported.
	jobtest.RunAll(t, job.Config{
		Store: store, StepperConfig: job.StepperConfig{
			Dialer:       fleet,
			Observer:     m.JobObserver(),
			Credentials:  bmc.StaticCredentials{"lab": {Username: "admin", Password: password}, "old": {Username: "admin", Password: "rotated-away"}},
			PollInterval: 2 * time.Millisecond,
		},

		ScanInterval: 20 * time.Millisecond,
	}, specs, 20*time.Second)

	// A boot-state tracker: one boot completes, one times out.
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	tr, err := bootstate.NewTracker(bootstate.Config{Store: store, Clock: clk, InsecureSkipAuth: true, Observer: m.BootObserver()})
	require.NoError(t, err)
	const u1, u2 = "4c4c4544-0042-4a10-8031-b2c04f4e4a31", "4c4c4544-0042-4a10-8031-b2c04f4e4a32"
	bg := context.Background()
	require.NoError(t, tr.StartBoot(bg, u1, "a1", time.Hour))
	require.NoError(t, tr.StartBoot(bg, u2, "a2", time.Minute))
	clk.Advance(40 * time.Second)
	_, err = tr.RecordSignal(bg, u1, "a1", bootstate.SignalBootStateReceived, "")
	require.NoError(t, err)
	clk.Advance(time.Minute)
	_, _, _, err = tr.BootResult(bg, u2, "a2")
	require.NoError(t, err)

	// Serve and scrape over HTTP on loopback.
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	require.True(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:"), srv.URL)
	fams := scrape(t, srv.URL+"/metrics")

	assert.Equal(t, 2.0, value(fams, "bmckit_jobs_started_total", "driver=redfish"))
	assert.Equal(t, 1.0, value(fams, "bmckit_jobs_started_total", "driver=ipmi"))
	assert.Equal(t, 1.0, value(fams, "bmckit_jobs_finished_total", "driver=redfish", "reason=Succeeded", "result=Succeeded"))
	assert.Equal(t, 1.0, value(fams, "bmckit_jobs_finished_total", "driver=redfish", "reason=Unauthorized", "result=Failed"))
	assert.Equal(t, 1.0, value(fams, "bmckit_jobs_finished_total", "driver=ipmi", "reason=Succeeded", "result=Succeeded"))
	assert.Equal(t, 1.0, value(fams, "bmckit_job_duration_seconds", "driver=ipmi", "result=Succeeded"))

	assert.Equal(t, 3.0, value(fams, "bmckit_tasks_started_total", "kind=power"))
	assert.Equal(t, 2.0, value(fams, "bmckit_task_duration_seconds", "kind=power", "result=Succeeded"))
	assert.Equal(t, 1.0, value(fams, "bmckit_task_duration_seconds", "kind=power", "result=Failed"))
	assert.Equal(t, 1.0, value(fams, "bmckit_task_duration_seconds", "kind=bootDevice", "result=Succeeded"))
	assert.Equal(t, 1.0, value(fams, "bmckit_task_duration_seconds", "kind=powerStatus", "result=Succeeded"))

	// Every call a fake BMC logged went over the wire once.
	assert.Equal(t, float64(len(bRF.Calls())), value(fams, "bmckit_bmc_requests_total", "driver=redfish"))
	assert.Equal(t, float64(len(bIPMI.Calls())), value(fams, "bmckit_bmc_requests_total", "driver=ipmi"))
	assert.Equal(t, 1.0, value(fams, "bmckit_bmc_logins_total", "driver=redfish"))
	assert.Equal(t, 1.0, value(fams, "bmckit_bmc_logins_total", "driver=ipmi"))
	assert.Equal(t, 1.0, value(fams, "bmckit_bmc_errors_total", "class=unauthorized", "driver=redfish", "op=login"))

	assert.Equal(t, 0.0, value(fams, "bmckit_runner_queue_waiting"))
	assert.Equal(t, 0.0, value(fams, "bmckit_runner_queue_jobs"))
	assert.Equal(t, 0.0, value(fams, "bmckit_lease_losses_total"))

	assert.Equal(t, 1.0, value(fams, "bmckit_bootstate_signals_total", "signal=BootStateReceived"))
	assert.Equal(t, 1.0, value(fams, "bmckit_bootstate_boots_completed_total"))
	assert.Equal(t, 1.0, value(fams, "bmckit_bootstate_boot_timeouts_total", "reason=TimedOut"))
	assert.Equal(t, 1.0, value(fams, "bmckit_bootstate_boot_duration_seconds", "result=Succeeded"))
	h := fams["bmckit_bootstate_boot_duration_seconds"].GetMetric()
	var sum float64
	for _, x := range h {
		sum += x.GetHistogram().GetSampleSum()
	}
	assert.Equal(t, 40.0+100.0, sum, "boot durations by the tracker's clock")

	// No credential in any label.
	var body strings.Builder
	for _, f := range fams {
		_, _ = expfmt.MetricFamilyToText(&body, f)
	}
	assert.NotContains(t, body.String(), password)
	assert.NotContains(t, body.String(), "rotated-away")
}

func TestGaugesFollowQueue(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := bmcprom.New(bmcprom.Options{Namespace: "x", ConstLabels: prometheus.Labels{"runner": "a"}})
	reg.MustRegister(m)
	o := m.JobObserver()
	o.Queue(observe.QueueEvent{Jobs: 7, Held: 2, Waiting: 5, Steps: 1})
	o.LeaseLost(observe.LeaseEvent{System: "10.0.0.1:443/redfish/v1/Systems/1", Job: "j"})
	fams, err := reg.Gather()
	require.NoError(t, err)
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	assert.Equal(t, 5.0, value(byName, "x_runner_queue_waiting", "runner=a"))
	assert.Equal(t, 7.0, value(byName, "x_runner_queue_jobs", "runner=a"))
	assert.Equal(t, 2.0, value(byName, "x_runner_held_systems", "runner=a"))
	assert.Equal(t, 1.0, value(byName, "x_runner_steps_in_flight", "runner=a"))
	assert.Equal(t, 1.0, value(byName, "x_lease_losses_total", "runner=a"))
}

// The monitor's health changes, by the health after the change.
func TestMonitorHealthChanges(t *testing.T) {
	m := bmcprom.New(bmcprom.Options{})
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	o := m.MonitorObserver()
	o.HealthChanged(monitor.HealthEvent{From: bmc.HealthUnknown, To: bmc.HealthOK})
	o.HealthChanged(monitor.HealthEvent{From: bmc.HealthOK, To: bmc.HealthCritical})
	o.HealthChanged(monitor.HealthEvent{From: bmc.HealthCritical, To: bmc.HealthOK})
	gathered, err := reg.Gather()
	require.NoError(t, err)
	fams := map[string]*dto.MetricFamily{}
	for _, f := range gathered {
		fams[f.GetName()] = f
	}
	assert.Equal(t, 2.0, value(fams, "bmckit_monitor_health_changes_total", "health=OK"))
	assert.Equal(t, 1.0, value(fams, "bmckit_monitor_health_changes_total", "health=Critical"))
}

// Critical BMC events set on machine records: one per event per machine,
// with no label naming a machine or a BMC.
func TestMonitorCriticalEvents(t *testing.T) {
	m := bmcprom.New(bmcprom.Options{})
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	o := m.MonitorObserver()
	o.CriticalEvent(monitor.CriticalEvent{System: "10.0.0.1:443/redfish/v1/Systems/1", Source: "10.0.0.1_443", Events: make([]bmcevents.Event, 2)})
	o.CriticalEvent(monitor.CriticalEvent{System: "10.0.0.1:443/redfish/v1/Systems/2", Source: "10.0.0.1_443", Events: make([]bmcevents.Event, 1)})
	gathered, err := reg.Gather()
	require.NoError(t, err)
	fams := map[string]*dto.MetricFamily{}
	for _, f := range gathered {
		fams[f.GetName()] = f
	}
	assert.Equal(t, 3.0, value(fams, "bmckit_monitor_critical_events_total"))
}

// A rollout's transitions, counted by from/to state; its halt and its
// completion by reason and result. No label names a rollout or a server.
func TestRolloutTransitions(t *testing.T) {
	m := bmcprom.New(bmcprom.Options{})
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))

	fleet := fake.NewFleet()
	var servers []rollout.Server
	for i := 0; i < 6; i++ {
		addr := fmt.Sprintf("redfish://10.0.0.%d/redfish/v1/Systems/1", i+1)
		_, err := fleet.AddNew(addr, fake.Options{Power: bmc.PowerOn})
		require.NoError(t, err)
		servers = append(servers, rollout.Server{Name: fmt.Sprintf("n%d", i), BMC: addr})
	}
	store := memstore.New()
	runner, err := job.NewRunner(job.Config{StepperConfig: job.StepperConfig{Dialer: fleet}, Store: store})
	require.NoError(t, err)
	ctl, err := rollout.New(rollout.Config{Runner: runner, Store: store, Observer: m.RolloutObserver()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = runner.Start(ctx); done <- struct{}{} }()
	go func() { _ = ctl.Start(ctx); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done }()

	_, err = ctl.Create(ctx, "cycle", rollout.Spec{
		Template: job.Spec{Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerCycle}}}},
		Servers:  servers,
		Policy:   rollout.Policy{MaxUnavailable: rollout.Count(2)},
	})
	require.NoError(t, err)
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	r, err := ctl.Wait(wctx, "cycle")
	require.NoError(t, err)
	require.Equal(t, rollout.ResultSucceeded, r.Status.Result)

	gathered, err := reg.Gather()
	require.NoError(t, err)
	fams := map[string]*dto.MetricFamily{}
	for _, f := range gathered {
		fams[f.GetName()] = f
	}
	assert.Equal(t, 6.0, value(fams, "bmckit_rollout_server_transitions_total", "from=pending", "to=running"))
	assert.Equal(t, 6.0, value(fams, "bmckit_rollout_server_transitions_total", "from=running", "to=succeeded"))
	assert.Equal(t, 1.0, value(fams, "bmckit_rollouts_completed_total", "result=Succeeded"))
	for _, f := range fams {
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				assert.NotContains(t, []string{"cycle", "n0", "n5"}, l.GetValue(), "label %s", l.GetName())
			}
		}
	}
}
