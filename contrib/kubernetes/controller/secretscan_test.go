package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
)

// No secret is shown anywhere on the Kubernetes path: a job with a password
// in spec.bmc is refused at admission (422) without echoing it; jobs that
// succeed, fail Unauthorized (a wrong password in their Secret) and fail
// InvalidSpec run; then every event, every object's status, the printer
// columns (the API server's Table) and every line the controller logged at
// any verbosity are scanned for both passwords.
func TestNoSecretShownOnRealAPIServer(t *testing.T) {
	env := apiServer.Get(t)
	ns := env.Namespace(t)
	c := adminClient(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const good, wrong = "Good-pw-7Qx!z", "Wrong-pw-3Kd@y"
	sim := newSim(redfishtest.Config{Systems: 3, Password: good, PowerDelay: 100 * time.Millisecond})
	defer sim.Close()
	require.NoError(t, c.Create(ctx, simSecret(ns, "bmc", bmc.Credentials{Username: sim.Credentials().Username, Password: good})))
	require.NoError(t, c.Create(ctx, simSecret(ns, "stale-bmc", bmc.Credentials{Username: sim.Credentials().Username, Password: wrong})))

	var logs lines
	startController(t, env, nil, ctlOpts{ns: ns, replica: "r1", log: funcr.New(logs.add, funcr.Options{Verbosity: 10})})

	// A password in the URL: refused at admission, the error not echoing it.
	withPW := strings.Replace(sim.Address("1"), "://", "://admin:"+good+"@", 1)
	err := c.Create(ctx, netbootJob(ns, "pw-in-url", withPW, "bmc"))
	require.Error(t, err, "a BMC URL with a password is refused")
	assert.True(t, apierrors.IsInvalid(err), "422 Unprocessable Entity: %v", err)
	assert.Contains(t, err.Error(), "spec.bmc", "the error names the field")
	assert.NotContains(t, err.Error(), good)

	require.NoError(t, c.Create(ctx, netbootJob(ns, "ok", sim.Address("1"), "bmc")))
	require.NoError(t, c.Create(ctx, netbootJob(ns, "unauthorized", sim.Address("2"), "stale-bmc")))
	invalid := netbootJob(ns, "invalid", sim.Address("3"), "bmc")
	invalid.Spec.Tasks[1].BootDevice.Device = "floppy" // refused by the runtime (or by the CRD's enum)
	if err := c.Create(ctx, invalid); err != nil {
		require.True(t, apierrors.IsInvalid(err), "refused at admission, or run and failed: %v", err)
		invalid = nil
	}
	results := map[string]string{"ok": string(conditions.ResultSucceeded), "unauthorized": string(conditions.ResultFailed)}
	if invalid != nil {
		results["invalid"] = string(conditions.ResultFailed)
	}
	for name := range results {
		waitFor(t, 2*time.Minute, name+" to finish", func() bool { return finished(c, ns, name) })
	}
	for name, want := range results {
		got := getJob(t, c, ns, name)
		assert.Equal(t, want, string(got.Status.Result), "%s: %+v", name, got.Status)
	}
	assert.Equal(t, conditions.ReasonUnauthorized, getJob(t, c, ns, "unauthorized").Status.Reason)

	// Everything a user can read.
	var evs corev1.EventList
	require.NoError(t, c.List(ctx, &evs, client.InNamespace(ns)))
	require.NotEmpty(t, evs.Items)
	var jobs v1alpha1.BMCJobList
	require.NoError(t, c.List(ctx, &jobs, client.InNamespace(ns)))
	cs, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	gv := v1alpha1.GroupVersion
	table, err := cs.RESTClient().Get().AbsPath("/apis", gv.Group, gv.Version, "namespaces", ns, "bmcjobs").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	require.NoError(t, err)
	require.Contains(t, string(table), `"columnDefinitions"`, "the API server's printer columns")
	shown := map[string]string{"events": mustJSON(t, evs), "jobs": mustJSON(t, jobs), "printer columns": string(table), "logs": logs.text()}
	// client-go's hex dumps of bodies (V(8)) split text across rows.
	shown["logs' hex dumps joined"] = hexRows.ReplaceAllString(shown["logs"], "")
	require.Contains(t, shown["logs"], "job completed", "the controller's logs were captured")
	for where, text := range shown {
		for _, pw := range []string{good, wrong} {
			assert.NotContains(t, text, pw, "a password in the %s", where)
		}
	}
	t.Logf("scanned %d events, %d jobs, %d bytes of printer columns, %d log lines", len(evs.Items), len(jobs.Items), len(table), strings.Count(shown["logs"], "\n")+1)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err, fmt.Sprintf("%T", v))
	return string(b)
}
