package controller_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
)

// powerIsKind is a custom kind (docs/custom-kinds.md) that checks the power
// state against params.want, reading it through the job's BMC connection.
type powerIsKind struct{}

type powerIsParams struct {
	Want string `json:"want"`
}

func (powerIsKind) Validate(raw json.RawMessage) error {
	var p powerIsParams
	if err := json.Unmarshal(raw, &p); err != nil || p.Want == "" {
		return &task.FieldError{Path: "want", Msg: "required"}
	}
	return nil
}
func (powerIsKind) Send(context.Context, *job.KindTask) error { return nil }
func (powerIsKind) Check(ctx context.Context, t *job.KindTask) (bool, string, error) {
	var p powerIsParams
	_ = json.Unmarshal(t.Params, &p)
	st, err := t.BMC.PowerState(ctx)
	if err != nil {
		return false, "", err
	}
	return string(st) == p.Want, "power " + string(st), nil
}

func customJob(ns, name, bmcURL, secret, kind, params string) *v1alpha1.BMCJob {
	o := &v1alpha1.BMCJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	o.Spec.Spec = job.Spec{BMC: bmcURL, CredentialsRef: secret, Tasks: []task.Spec{
		{Custom: &task.CustomAction{Kind: kind, Params: task.CustomParams(params)}},
	}}
	return o
}

// A BMCJob with a custom task: the API server keeps its params as written
// (a schema that pruned unknown fields would silently drop them), refuses a
// kind name or params of the wrong shape, and the controller runs the
// kind the program registered.
func TestCustomKindOnRealAPIServer(t *testing.T) {
	env := apiServer.Get(t)
	ns := env.Namespace(t)
	c := adminClient(t, env)
	ctx := context.Background()
	sim := newSim(redfishtest.Config{})
	defer sim.Close()
	require.NoError(t, c.Create(ctx, simSecret(ns, "bmc", sim.Credentials())))

	// Refused by the API server, before any controller sees them.
	for _, bad := range []struct{ kind, params, want string }{
		{"power-is", `{"want":"On"}`, "spec.tasks[0].custom.kind"},
		{"example.com/power-is", `["On"]`, "spec.tasks[0].custom.params"},
	} {
		err := c.Create(ctx, customJob(ns, "bad", sim.Address("1"), "bmc", bad.kind, bad.params))
		require.Error(t, err, "%s %s", bad.kind, bad.params)
		assert.True(t, apierrors.IsInvalid(err), "%v", err)
		assert.Contains(t, err.Error(), bad.want)
	}

	params := `{"want":"On","note":{"ticket":"OPS-1","racks":[7,8]}}`
	require.NoError(t, c.Create(ctx, customJob(ns, "power-is", sim.Address("1"), "bmc", "example.com/power-is", params)))
	require.NoError(t, c.Create(ctx, customJob(ns, "unknown", sim.Address("1"), "bmc", "example.com/not-registered", `{}`)))
	stored := getJob(t, c, ns, "power-is")
	assert.JSONEq(t, params, string(stored.Spec.Tasks[0].Custom.Params), "the API server kept the params as written")

	startController(t, env, nil, ctlOpts{ns: ns, replica: "r1", kinds: job.Kinds{"example.com/power-is": powerIsKind{}}})
	waitFor(t, time.Minute, "the jobs to finish", func() bool { return finished(c, ns, "power-is") && finished(c, ns, "unknown") })

	got := getJob(t, c, ns, "power-is")
	assert.Equal(t, conditions.ResultSucceeded, got.Status.Result, "status: %+v", got.Status)
	assert.Equal(t, "power On", got.Status.Tasks[0].Message)
	assert.JSONEq(t, params, string(got.Spec.Tasks[0].Custom.Params))

	un := getJob(t, c, ns, "unknown")
	assert.Equal(t, conditions.ResultFailed, un.Status.Result)
	assert.Equal(t, conditions.ReasonInvalidSpec, un.Status.Reason)
	assert.Contains(t, un.Status.Message, `tasks[0].custom.kind: "example.com/not-registered" is not a kind this program registered`)
}
