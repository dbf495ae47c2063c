package v1alpha1_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"

	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
)

func loadRolloutCRD(t *testing.T) *apiextensions.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bmckit.io_bmcrollouts.yaml"))
	require.NoError(t, err)
	var crd apiextensionsv1.CustomResourceDefinition
	require.NoError(t, yaml.UnmarshalStrict(data, &crd))
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&crd)
	var in apiextensions.CustomResourceDefinition
	require.NoError(t, apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&crd, &in, nil))
	return &in
}

// The API server's own CRD validation accepts the BMCRollout CRD: a
// structural schema, and CEL rules (the template's task rules over up to
// 100 tasks, the immutability rules) within the cost budget.
func TestRolloutCRDIsAcceptedByTheAPIServersValidation(t *testing.T) {
	errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), loadRolloutCRD(t))
	assert.Empty(t, errs, "%v", errs.ToAggregate())
}

// RolloutTemplate is job.Spec without the server's own fields: a field
// added to job.Spec must be added to the template (or listed here).
func TestRolloutTemplateCoversJobSpec(t *testing.T) {
	perServer := map[string]bool{"BMC": true, "SystemUUID": true}
	tmpl := reflect.TypeFor[v1alpha1.RolloutTemplate]()
	js := reflect.TypeFor[job.Spec]()
	for i := 0; i < js.NumField(); i++ {
		f := js.Field(i)
		if perServer[f.Name] {
			continue
		}
		tf, ok := tmpl.FieldByName(f.Name)
		if assert.True(t, ok, "RolloutTemplate lacks job.Spec.%s", f.Name) {
			assert.Equal(t, f.Type, tf.Type, "RolloutTemplate.%s", f.Name)
			assert.Equal(t, f.Tag.Get("json"), tf.Tag.Get("json"), "RolloutTemplate.%s's JSON name", f.Name)
		}
	}
}

func rolloutObj(ns, name string) *v1alpha1.BMCRollout {
	ro := &v1alpha1.BMCRollout{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	ro.Spec.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"model": "x1"}}
	ro.Spec.Template.Tasks = []task.Spec{{Power: &task.PowerAction{Op: task.PowerOff}}}
	return ro
}

// Admission of BMCRollouts on a real kube-apiserver: limits as a number or
// a percentage string, bad limits refused naming the field, a name with a
// '.' refused, an empty selector refused, template, selector and policy
// immutable while the control fields change, and a full status accepted.
func TestRolloutAdmissionOnRealAPIServer(t *testing.T) {
	env := apiServer.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	c := env.Client

	good := []intstr.IntOrString{intstr.FromInt32(0), intstr.FromInt32(50), intstr.FromString("5%"), intstr.FromString("100%"), intstr.FromString("12")}
	for i, l := range good {
		ro := rolloutObj(ns, "good-"+string(rune('a'+i)))
		ro.Spec.Policy.MaxUnavailable = &l
		ro.Spec.Policy.FailureBudget = &l
		ro.Spec.Policy.MaxUnavailablePerGroup = []v1alpha1.RolloutGroupLimit{{Label: "rack", Max: intstr.FromString("50%")}}
		require.NoError(t, c.Create(ctx, ro), "maxUnavailable %s", l.String())
		got := &v1alpha1.BMCRollout{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ro), got))
		assert.Equal(t, l, *got.Spec.Policy.MaxUnavailable, "kept as sent (%s)", l.String())
	}
	bad := []intstr.IntOrString{intstr.FromInt32(-1), intstr.FromString("101%"), intstr.FromString("-5%"), intstr.FromString("5 %"), intstr.FromString("five")}
	for i, l := range bad {
		ro := rolloutObj(ns, "bad-"+string(rune('a'+i)))
		ro.Spec.Policy.MaxUnavailable = &l
		err := c.Create(ctx, ro)
		require.Error(t, err, "maxUnavailable %s", l.String())
		require.True(t, apierrors.IsInvalid(err), "%v", err)
		assert.Contains(t, err.Error(), "spec.policy.maxUnavailable")
		t.Logf("maxUnavailable %q refused: %v", l.String(), err)
	}
	ro := rolloutObj(ns, "zero-group")
	ro.Spec.Policy.MaxUnavailablePerGroup = []v1alpha1.RolloutGroupLimit{{Label: "rack", Max: intstr.FromInt32(0)}}
	err := c.Create(ctx, ro)
	require.True(t, apierrors.IsInvalid(err), "a group limit of 0: %v", err)
	assert.Contains(t, err.Error(), "spec.policy.maxUnavailablePerGroup[0].max")

	err = c.Create(ctx, rolloutObj(ns, "fw.2026"))
	require.True(t, apierrors.IsInvalid(err), "a name with a dot: %v", err)
	assert.Contains(t, err.Error(), "may not contain '.'")

	ro = rolloutObj(ns, "everything")
	ro.Spec.Selector = metav1.LabelSelector{}
	err = c.Create(ctx, ro)
	require.True(t, apierrors.IsInvalid(err), "an empty selector: %v", err)
	assert.Contains(t, err.Error(), "spec.selector")

	ro = rolloutObj(ns, "wfb")
	ro.Spec.Template.Tasks = []task.Spec{{WaitForBoot: &task.WaitForBootAction{SystemUUID: "4c4c4544-0042-3510-8051-b7c04f4e4d31"}}}
	err = c.Create(ctx, ro)
	require.True(t, apierrors.IsInvalid(err), "waitForBoot: %v", err)
	assert.Contains(t, err.Error(), "spec.template.tasks")

	// Immutable: template, selector, policy. Mutable: the control.
	ro = rolloutObj(ns, "immutable")
	ro.Spec.Policy.Canary = 1
	require.NoError(t, c.Create(ctx, ro))
	for what, change := range map[string]func(*v1alpha1.BMCRollout){
		"spec.template": func(o *v1alpha1.BMCRollout) { o.Spec.Template.Tasks[0].Power.Op = task.PowerOn },
		"spec.selector": func(o *v1alpha1.BMCRollout) { o.Spec.Selector.MatchLabels["model"] = "x2" },
		"spec.policy":   func(o *v1alpha1.BMCRollout) { o.Spec.Policy.Canary = 2 },
	} {
		cur := &v1alpha1.BMCRollout{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ro), cur))
		change(cur)
		err := c.Update(ctx, cur)
		require.True(t, apierrors.IsInvalid(err), "%s changed: %v", what, err)
		assert.Contains(t, err.Error(), what+": Invalid value")
	}
	cur := &v1alpha1.BMCRollout{}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ro), cur))
	cur.Spec.Paused, cur.Spec.Abort, cur.Spec.CanaryApproved = true, true, true
	require.NoError(t, c.Update(ctx, cur), "the control changes")

	// A full status is accepted and kept.
	now := timestamp.New(time.Now().UTC().Truncate(time.Second))
	cur.Status = v1alpha1.BMCRolloutStatus{
		ObservedGeneration: cur.Generation,
		Conditions:         []conditions.Condition{{Type: conditions.TypeCompleted, Status: conditions.False, Reason: "Rolling", Message: "1 running", LastTransitionTime: now}},
		States:             "rsfk.h",
		Counts:             v1alpha1.RolloutCounts{Pending: 1, Held: 1, Running: 1, Succeeded: 1, Failed: 1, Skipped: 1},
		Canary:             &v1alpha1.RolloutCanary{Size: 1, Succeeded: 1, Result: "Succeeded", Servers: []int{1}},
		FailureBudget:      1, FailureBudgetLeft: -1, Halt: "FailureBudgetSpent",
		Failures:        []v1alpha1.RolloutFailure{{Server: "m2", Job: "immutable.2.m2", Reason: "BMCError", Message: "boom"}},
		Running:         []v1alpha1.RolloutRunning{{Index: 0, Since: now}},
		JobMilliseconds: 1234, JobsTimed: 1, Estimate: "5s", StartTime: &now,
		Servers: []v1alpha1.RolloutServer{{Name: "m0", BMC: "redfish://10.0.0.5/redfish/v1/Systems/1", CredentialsRef: "s", Labels: map[string]string{"rack": "r1"}}},
	}
	want, _ := json.Marshal(cur.Status)
	require.NoError(t, c.Status().Update(ctx, cur))
	got := &v1alpha1.BMCRollout{}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ro), got))
	have, _ := json.Marshal(got.Status)
	assert.JSONEq(t, string(want), string(have), "every status field survives the schema")
}

// docYAML returns the first ```yaml block after the heading in a doc.
func docYAML(t *testing.T, doc, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", doc))
	require.NoError(t, err)
	s := string(b)
	i := strings.Index(s, "\n"+heading+"\n")
	require.GreaterOrEqual(t, i, 0, "%s has no heading %q", doc, heading)
	s = s[i:]
	i = strings.Index(s, "```yaml\n")
	require.GreaterOrEqual(t, i, 0, "no yaml block after %q", heading)
	s = s[i+len("```yaml\n"):]
	return s[:strings.Index(s, "```")]
}

// The BMCRollout examples of docs/kubernetes.md ("Rollouts") and
// docs/rollouts.md ("In Kubernetes") are accepted by the API server as
// they are written.
func TestRolloutDocExamplesOnRealAPIServer(t *testing.T) {
	env := apiServer.Get(t)
	ns := env.Namespace(t)
	for _, d := range []struct{ doc, heading string }{{"kubernetes.md", "### Rollouts"}, {"rollouts.md", "## In Kubernetes"}} {
		ro := &v1alpha1.BMCRollout{}
		require.NoError(t, yaml.UnmarshalStrict([]byte(docYAML(t, d.doc, d.heading)), ro), d.doc)
		ro.Namespace = ns
		require.NoError(t, env.Client.Create(context.Background(), ro), d.doc)
	}
}
