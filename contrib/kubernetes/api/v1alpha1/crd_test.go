package v1alpha1_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/job/jobtest"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"

	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
)

// loadCRD reads the committed CRD (config/crd), as kubectl apply would send
// it.
func loadCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bmckit.io_bmcjobs.yaml"))
	require.NoError(t, err)
	var crd apiextensionsv1.CustomResourceDefinition
	require.NoError(t, yaml.UnmarshalStrict(data, &crd))
	return &crd
}

// internalCRD is the CRD as the API server validates it: defaulted and
// converted to the internal version.
func internalCRD(t *testing.T) *apiextensions.CustomResourceDefinition {
	t.Helper()
	crd := loadCRD(t)
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	var in apiextensions.CustomResourceDefinition
	require.NoError(t, apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, &in, nil))
	return &in
}

// The API server would accept the CRD: structural schema, list-map keys
// required, CEL rules that compile and stay within the cost limits (the
// per-task rules run for up to 100 tasks).
func TestCRDIsAcceptedByTheAPIServersValidation(t *testing.T) {
	errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), internalCRD(t))
	assert.Empty(t, errs, "%v", errs.ToAggregate())
}

func TestCRDSchemaCarriesTheMarkers(t *testing.T) {
	crd := loadCRD(t)
	require.Len(t, crd.Spec.Versions, 1)
	v := crd.Spec.Versions[0]
	assert.Equal(t, "v1alpha1", v.Name)
	require.NotNil(t, v.Subresources)
	assert.NotNil(t, v.Subresources.Status, "status subresource")
	root := v.Schema.OpenAPIV3Schema
	spec := root.Properties["spec"]
	status := root.Properties["status"]

	// Inline embedding: job.Spec's and job.Status's fields sit directly in
	// spec and status.
	assert.Contains(t, spec.Properties, "bmc")
	assert.Contains(t, spec.Required, "bmc")
	assert.Contains(t, spec.Required, "tasks")
	assert.Contains(t, status.Properties, "result")

	// BMCJobSpec's admission rules sit on spec (an object: the API server
	// then leaves the value out of the error) and name their field.
	var paths []string
	for _, r := range spec.XValidations {
		paths = append(paths, r.FieldPath)
		assert.Empty(t, r.MessageExpression, "fixed messages: never the value")
	}
	assert.Contains(t, paths, ".bmc")
	assert.Contains(t, paths, ".tasks")
	require.NotNil(t, spec.Properties["bmc"].MaxLength, "maxLength bounds the bmc rules' cost")
	assert.Empty(t, spec.Properties["bmc"].XValidations, "a rule on the string itself would repeat the value in its error")

	tasks := spec.Properties["tasks"]
	require.NotNil(t, tasks.MaxItems)
	assert.Equal(t, int64(100), *tasks.MaxItems)
	item := tasks.Items.Schema
	require.NotEmpty(t, item.XValidations, "task.Spec's one-of rule")
	assert.Contains(t, item.XValidations[0].Rule, "has(self.power)")
	assert.Contains(t, item.XValidations[0].Rule, "has(self.waitForBoot)")
	assert.Equal(t, enum("on", "off", "soft-off", "cycle", "reset"), item.Properties["power"].Properties["op"].Enum)
	assert.Equal(t, enum("pxe", "disk", "cdrom", "bios", "http"), item.Properties["bootDevice"].Properties["device"].Enum)
	assert.Equal(t, enum("warm", "cold"), item.Properties["bmcReset"].Properties["type"].Enum)
	timeout := item.Properties["timeout"]
	assert.Equal(t, "string", timeout.Type)
	assert.Equal(t, task.DurationPattern, timeout.Pattern)

	// Conditions: a list keyed by type at .status.conditions (kubectl wait
	// --for=condition=Completed reads it), with date-time transition times.
	conds := status.Properties["conditions"]
	require.NotNil(t, conds.XListType)
	assert.Equal(t, "map", *conds.XListType)
	assert.Equal(t, []string{"type"}, conds.XListMapKeys)
	c := conds.Items.Schema
	assert.Equal(t, enum("True", "False", "Unknown"), c.Properties["status"].Enum)
	assert.Equal(t, "date-time", c.Properties["lastTransitionTime"].Format)
	assert.Contains(t, c.Required, "type")
	assert.Contains(t, c.Required, "status")
	assert.Equal(t, enum("Succeeded", "Failed", "Canceled", "TimedOut"), status.Properties["result"].Enum)
	assert.Equal(t, "date-time", status.Properties["startTime"].Format)

	taskStatus := status.Properties["tasks"].Items.Schema
	assert.Equal(t, "map", *taskStatus.Properties["conditions"].XListType)
	assert.Equal(t, "date-time", taskStatus.Properties["bootTries"].Items.Schema.Properties["notBefore"].Format)

	wire := status.Properties["wire"]
	for _, k := range []string{"requests", "connections", "logins", "throttled", "throttleWait"} {
		assert.Contains(t, wire.Properties, k, "bmc.Stats keys are camelCase")
	}

	// The printer columns a user reads with kubectl get.
	var cols []string
	for _, col := range v.AdditionalPrinterColumns {
		cols = append(cols, col.Name+"="+col.JSONPath)
	}
	assert.Contains(t, cols, `Completed=.status.conditions[?(@.type=="Completed")].status`)
}

func enum(vals ...string) []apiextensionsv1.JSON {
	out := make([]apiextensionsv1.JSON, len(vals))
	for i, v := range vals {
		out[i] = apiextensionsv1.JSON{Raw: []byte(`"` + v + `"`)}
	}
	return out
}

// validator checks objects as the API server does on create: the OpenAPI
// schema, then the CEL rules.
type validator struct {
	schema     apiservervalidation.SchemaValidator
	structural *structuralschema.Structural
	cel        *cel.Validator
}

func newValidator(t *testing.T) *validator {
	t.Helper()
	crd := internalCRD(t)
	// One version: the internal CRD holds its schema at the top level.
	require.NotNil(t, crd.Spec.Validation)
	s := crd.Spec.Validation.OpenAPIV3Schema
	sv, _, err := apiservervalidation.NewSchemaValidator(s)
	require.NoError(t, err)
	st, err := structuralschema.NewStructural(s)
	require.NoError(t, err)
	return &validator{schema: sv, structural: st, cel: cel.NewValidator(st, true, celconfig.PerCallLimit)}
}

// validate returns the API server's complaints about obj, one string each.
func (v *validator) validate(t *testing.T, obj any) []string {
	t.Helper()
	data, err := json.Marshal(obj)
	require.NoError(t, err)
	var u map[string]any
	require.NoError(t, json.Unmarshal(data, &u))
	errs := apiservervalidation.ValidateCustomResource(nil, u, v.schema)
	celErrs, _ := v.cel.Validate(context.Background(), field.NewPath(""), v.structural, u, nil, celconfig.RuntimeCELCostBudget)
	errs = append(errs, celErrs...)
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

func bmcJob(spec job.Spec) *v1alpha1.BMCJob {
	return &v1alpha1.BMCJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "BMCJob"},
		ObjectMeta: metav1.ObjectMeta{Name: "netboot", Namespace: "default"},
		Spec:       v1alpha1.BMCJobSpec{Spec: spec},
	}
}

// A real job's spec and its status as the Runner leaves it (run on the fake
// BMC) pass the CRD's validation: a controller's status patch is never
// refused.
func TestRealJobPassesValidation(t *testing.T) {
	v := newValidator(t)
	const addr = "redfish://10.9.0.1/redfish/v1/Systems/1"
	fleet := fake.NewFleet()
	_, err := fleet.AddNew(addr, fake.Options{Power: bmc.PowerOn})
	require.NoError(t, err)
	spec := jobtest.Netboot(addr, task.BootModeUEFI, time.Minute)
	spec.Timeout = task.Duration{Duration: 30 * time.Minute}
	j := jobtest.Run(t, job.Config{StepperConfig: job.StepperConfig{Dialer: fleet}}, bmc.Credentials{Username: "admin", Password: "secret"}, spec, time.Minute)
	jobtest.AssertCompleted(t, j, conditions.ResultSucceeded)

	obj := bmcJob(j.Spec)
	obj.Status.Status = j.Status
	assert.Empty(t, v.validate(t, obj))
	assert.NotEmpty(t, obj.Status.Conditions, "the test must check a status with conditions")
}

func TestValidSpecsPass(t *testing.T) {
	v := newValidator(t)
	yes := true
	spec := job.Spec{
		BMC: "ipmi://10.0.0.6", CredentialsRef: "bmc-6", SystemUUID: "4c4c4544-0042-3510-8052-b4c04f565432",
		Timeout: task.Duration{Duration: time.Hour},
		Tasks: []task.Spec{
			{Power: &task.PowerAction{Op: task.PowerSoftOff}},
			{PowerStatus: &task.PowerStatusAction{}},
			{Reachable: &task.ReachableAction{}, Timeout: task.Duration{Duration: 20 * time.Second}},
			{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "https://boot.example/ipxe.efi", Mode: task.BootModeUEFI, EmulateOnce: &yes}},
			{BootDevice: &task.BootDeviceAction{Device: task.BootDisk, Persistent: true}},
			{VirtualMedia: &task.VirtualMediaAction{ImageURL: "https://images.example/live.iso"}},
			{VirtualMedia: &task.VirtualMediaAction{Kind: task.MediaUSB, Eject: true}},
			{BMCReset: &task.BMCResetAction{Type: task.BMCResetCold}},
			{FirmwareUpdate: &task.FirmwareUpdateAction{ImageURI: "https://images.example/bmc-2.bin", Component: "BMC", Version: "2", SatisfiedBy: []string{"3", "4"}}},
			{WaitForBoot: &task.WaitForBootAction{WaitForBootPolicy: task.WaitForBootPolicy{
				Mode: task.BootAnyOf, Signals: []string{"IPXEScriptFetched", "BootStateReceived"},
				Deadlines:      []task.SignalDeadline{{Signal: "IPXEScriptFetched", Within: task.Duration{Duration: 5 * time.Minute}}},
				AllowedSources: []string{"10.0.0.0/8", "fd00::1"}, Retries: 2, RetryBackoff: task.Duration{Duration: 30 * time.Second},
			}}, Timeout: task.Duration{Duration: 20 * time.Minute}},
		},
	}
	require.NoError(t, spec.Validate(), "the sample must be valid for bmckit too")
	assert.Empty(t, v.validate(t, bmcJob(spec)))
}

// The schema refuses at admission what Validate refuses, for the rules it
// can state: one action per task, enums, durations, the bootDevice and
// virtualMedia rules, limits.
func TestInvalidSpecsAreRefused(t *testing.T) {
	v := newValidator(t)
	yes := true
	base := func(ts ...task.Spec) job.Spec { return job.Spec{BMC: "ipmi://10.0.0.6", Tasks: ts} }
	cases := map[string]struct {
		obj  any
		want string
	}{
		"two actions": {bmcJob(base(task.Spec{Power: &task.PowerAction{Op: task.PowerOn}, Reachable: &task.ReachableAction{}})), "exactly one of the fields"},
		"no action":   {bmcJob(base(task.Spec{Name: "nothing"})), "exactly one of the fields"},
		"no tasks":    {bmcJob(job.Spec{BMC: "ipmi://10.0.0.6", Tasks: []task.Spec{}}), "spec.tasks"},
		"bad op":      {bmcJob(base(task.Spec{Power: &task.PowerAction{Op: "of"}})), `Unsupported value: "of"`},
		"bad device":  {bmcJob(base(task.Spec{BootDevice: &task.BootDeviceAction{Device: "floppy"}})), `Unsupported value: "floppy"`},
		"http without uri": {bmcJob(base(task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP}})),
			"uri is required for device http"},
		"uri without http": {bmcJob(base(task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, URI: "https://x.example/a.efi"}})),
			"uri is required for device http"},
		"http legacy": {bmcJob(base(task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "https://x.example/a.efi", Mode: task.BootModeLegacy}})),
			"cannot boot in legacy mode"},
		"emulate persistent": {bmcJob(base(task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Persistent: true, EmulateOnce: &yes}})),
			"emulateOnce is for a one-time override"},
		"media both":    {bmcJob(base(task.Spec{VirtualMedia: &task.VirtualMediaAction{ImageURL: "https://x.example/a.iso", Eject: true}})), "set imageURL to insert"},
		"media neither": {bmcJob(base(task.Spec{VirtualMedia: &task.VirtualMediaAction{Kind: task.MediaCD}})), "set imageURL to insert"},
		"bad uuid":      {bmcJob(job.Spec{BMC: "ipmi://10.0.0.6", SystemUUID: "not-a-uuid", Tasks: []task.Spec{{Reachable: &task.ReachableAction{}}}}), "spec.systemUUID"},
		"retries":       {bmcJob(base(task.Spec{WaitForBoot: &task.WaitForBootAction{WaitForBootPolicy: task.WaitForBootPolicy{Retries: 11}}})), "retries"},
		"bad signal":    {bmcJob(base(task.Spec{WaitForBoot: &task.WaitForBootAction{WaitForBootPolicy: task.WaitForBootPolicy{Signals: []string{"ipxe-fetched"}}}})), "signals[0]"},
		"satisfiedBy holds version": {bmcJob(base(task.Spec{FirmwareUpdate: &task.FirmwareUpdateAction{ImageURI: "https://images.example/a.bin", Component: "BMC", Version: "2", SatisfiedBy: []string{"3", "2"}}})),
			"satisfiedBy must not hold version"},
	}
	for name, c := range cases {
		errs := v.validate(t, c.obj)
		assert.True(t, containsAny(errs, c.want), "%s: want an error containing %q, got %q", name, c.want, errs)
	}

	// Durations: a pattern-checked string, whatever a decoder would accept.
	for _, d := range []string{"5 minutes", "-1s", "30", "1d"} {
		obj := map[string]any{
			"apiVersion": v1alpha1.GroupVersion.String(), "kind": "BMCJob", "metadata": map[string]any{"name": "x"},
			"spec": map[string]any{"bmc": "ipmi://10.0.0.6", "tasks": []any{map[string]any{"reachable": map[string]any{}, "timeout": d}}},
		}
		assert.True(t, containsAny(v.validate(t, obj), "spec.tasks[0].timeout"), "timeout %q must be refused", d)
	}
}

func containsAny(errs []string, want string) bool {
	for _, e := range errs {
		if strings.Contains(e, want) {
			return true
		}
	}
	return false
}

// The object the API server holds after a controller's first status patch
// passes validation. The BMCJob is created without a status; the first
// step's merge patch (client.MergeFrom, as the example's Reconcile sends it)
// leaves out every field that did not change from the zero status, among
// them currentTask (0 -> 0). A schema that requires such a field refuses
// every status patch with 422 (seen on a real kube-apiserver v1.37.2: every
// BMCJob stuck before its first BMC call), which validating a whole
// marshalled object cannot show.
func TestFirstStatusPatchPassesValidation(t *testing.T) {
	v := newValidator(t)
	ctx := context.Background()
	const addr = "redfish://10.9.0.2/redfish/v1/Systems/1"
	b := fake.New(fake.Options{Power: bmc.PowerOn, PowerTransition: time.Hour}) // the job stays on task 0
	st, err := job.NewStepper(job.StepperConfig{Dialer: b, Locks: syslock.NoLocking})
	require.NoError(t, err)
	defer st.Close(ctx)

	created := bmcJob(job.Spec{BMC: addr, Tasks: []task.Spec{{Power: &task.PowerAction{Op: task.PowerOff}}}})
	created.Generation = 1
	stored, err := json.Marshal(created)
	require.NoError(t, err)
	var asCreated map[string]any
	require.NoError(t, json.Unmarshal(stored, &asCreated))
	delete(asCreated, "status") // kubectl apply of a spec sends none
	stored, err = json.Marshal(asCreated)
	require.NoError(t, err)

	obj := created.DeepCopy()
	j := &job.Job{Name: obj.Name, Generation: obj.Generation, Spec: obj.Spec.Spec}
	var patches [][]byte
	_, err = st.StepPatch(ctx, j, func(_ context.Context, before, after job.Status) error {
		base := obj.DeepCopy()
		base.Status.Status, obj.Status.Status = before, after
		p, err := client.MergeFrom(base).Data(obj)
		patches = append(patches, p)
		return err
	})
	require.NoError(t, err)
	require.NotEmpty(t, patches)
	assert.Equal(t, 0, obj.Status.CurrentTask, "the test needs a status still at task 0")
	for i, p := range patches {
		stored, err = jsonpatch.MergePatch(stored, p)
		require.NoError(t, err, "patch %d", i)
		var u map[string]any
		require.NoError(t, json.Unmarshal(stored, &u))
		assert.Empty(t, v.validate(t, u), "the object after status patch %d: %s", i+1, p)
	}
}
