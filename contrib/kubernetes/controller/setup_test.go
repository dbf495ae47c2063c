package controller_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
	"github.com/bmckit/bmckit/contrib/kubernetes/controller"
	"github.com/bmckit/bmckit/contrib/kubernetes/secretcreds"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/storage/memstore"
)

// newManager is a manager that is never started: Setup only adds to it.
// Its rest.Config points at a closed port on 127.0.0.1, so any API call
// would fail rather than reach a cluster.
func newManager(t *testing.T) ctrl.Manager {
	t.Helper()
	mgr, err := ctrl.NewManager(&rest.Config{Host: "http://127.0.0.1:1"}, ctrl.Options{
		Scheme:                 newScheme(t),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Each test sets up its own "bmcjob" controller.
		Controller: config.Controller{SkipNameValidation: ptr(true)},
	})
	require.NoError(t, err)
	return mgr
}

func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// Setup's metrics, scraped over HTTP on 127.0.0.1 as Prometheus scrapes the
// manager's /metrics: after a netboot BMCJob (through the Reconciler) and
// a Runner job, the adapter's job, task and BMC series are there.
func TestMetricsScrape(t *testing.T) {
	fleet := fake.NewFleet()
	b, err := fleet.AddNew(system1, fake.Options{Power: bmc.PowerOn})
	require.NoError(t, err)
	c := newClient(t, bmcJob("netboot", netbootSpec(system1, "")))
	reg := prometheus.NewRegistry()
	ctl, err := controller.Setup(newManager(t), controller.Options[*v1alpha1.BMCJob]{NewObject: newBMCJob,
		Dialer: fleet, Store: memstore.New(), Registerer: reg,
		Credentials: secretcreds.Resolver{Reader: c},
		Stepper:     job.StepperConfig{PollInterval: time.Millisecond},
		Runner:      job.Config{StepperConfig: job.StepperConfig{PollInterval: time.Millisecond}, ScanInterval: 5 * time.Millisecond},
	})
	require.NoError(t, err)
	// The manager's client needs a cluster; the Reconciler gets the fake.
	ctl.Reconciler.Client = c

	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	require.True(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:"), srv.URL)

	o := drive(t, ctl.Reconciler, c, "netboot")
	require.Equal(t, conditions.ResultSucceeded, o.Status.Result)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctl.Runner.Start(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	_, err = fleet.AddNew("redfish://10.0.0.6/redfish/v1/Systems/1", fake.Options{Power: bmc.PowerOn})
	require.NoError(t, err)
	_, err = ctl.Runner.Submit(ctx, "power-off", job.Spec{BMC: "redfish://10.0.0.6/redfish/v1/Systems/1", Tasks: netbootSpec("", "").Tasks[:1]})
	require.NoError(t, err)
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	rj, err := ctl.Runner.Wait(wctx, "power-off")
	require.NoError(t, err)
	require.Equal(t, conditions.ResultSucceeded, rj.Status.Result)

	code, body := getBody(t, srv.URL+"/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, want := range []string{
		`bmckit_jobs_finished_total{driver="redfish",reason="Succeeded",result="Succeeded"} 2`,
		`bmckit_tasks_started_total{kind="power"} 3`,
		`bmckit_tasks_started_total{kind="bootDevice"} 1`,
		`bmckit_task_duration_seconds_count{kind="power",result="Succeeded"} 3`,
		`bmckit_bmc_logins_total{driver="redfish"} 2`,
	} {
		assert.Contains(t, body, want+"\n")
	}
	assert.Contains(t, body, "bmckit_runner_queue_jobs ")
	assert.Equal(t, 1, b.Sessions().Logins)
}

// The Runner Setup adds is a Runnable the manager starts on every replica
// (no leader election), and its healthz check, served as the manager serves
// /healthz, fails before Start and passes while it runs.
func TestRunnerRunnableAndHealthz(t *testing.T) {
	ctl, err := controller.Setup(newManager(t), controller.Options[*v1alpha1.BMCJob]{NewObject: newBMCJob,
		Dialer: fake.NewFleet(), Store: memstore.New(), Registerer: prometheus.NewRegistry(),
		Runner: job.Config{ScanInterval: 5 * time.Millisecond},
	})
	require.NoError(t, err)
	require.NotNil(t, ctl.Runner)
	assert.False(t, ctl.Runner.NeedLeaderElection())

	srv := httptest.NewServer(http.StripPrefix("/healthz", &healthz.Handler{Checks: map[string]healthz.Checker{"bmckit-runner": ctl.Runner.Healthz}}))
	defer srv.Close()
	code, body := getBody(t, srv.URL+"/healthz")
	assert.Equal(t, http.StatusInternalServerError, code, body)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ctl.Runner.Start(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body = getBody(t, srv.URL+"/healthz")
		if code == http.StatusOK {
			break
		}
		require.True(t, time.Now().Before(deadline), "healthz never passed: %d %s", code, body)
		time.Sleep(time.Millisecond) // poll interval
	}
	cancel()
	require.NoError(t, <-done)
	code, _ = getBody(t, srv.URL+"/healthz")
	assert.Equal(t, http.StatusInternalServerError, code, "unhealthy once stopped")
}

// Without a Store, Setup locks systems with Leases, which need a
// namespace.
func TestSetupNeedsNamespaceForLeases(t *testing.T) {
	_, err := controller.Setup(newManager(t), controller.Options[*v1alpha1.BMCJob]{NewObject: newBMCJob, Dialer: fake.NewFleet(), Registerer: prometheus.NewRegistry()})
	require.ErrorContains(t, err, "Namespace")
	ctl, err := controller.Setup(newManager(t), controller.Options[*v1alpha1.BMCJob]{NewObject: newBMCJob, Dialer: fake.NewFleet(), Registerer: prometheus.NewRegistry(), Namespace: "bmckit-system"})
	require.NoError(t, err)
	assert.Nil(t, ctl.Runner)
}

func ptr[T any](v T) *T { return &v }
