package v1alpha1_test

// Admission of BMCJobs: the CEL rules of BMCJobSpec (spec.bmc and the task
// shapes) against a real kube-apiserver and etcd (package kubetest; the
// binaries come from KUBEBUILDER_ASSETS, built by scripts/kube-binaries.sh:
// without them these tests skip, and fail under CI=true), and the same
// rules held against the runtime's own checks (bmc.ParseEndpoint,
// job.Spec.Validate) with the API server's CEL validator in process.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"

	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
	"github.com/bmckit/bmckit/contrib/kubernetes/kubetest"
)

var apiServer = kubetest.Shared{Options: kubetest.Options{CRDDirectoryPaths: []string{"../../config/crd"}, Scheme: testScheme()}}

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	code := m.Run()
	apiServer.Stop()
	os.Exit(code)
}

func testScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// password is the secret the bad addresses carry; no answer of the API
// server may contain it.
const password = "s3cr3t-Pa55"

// badAddresses are refused by bmc.ParseEndpoint and at admission, each with
// the words the refusal must contain.
var badAddresses = []struct{ addr, want string }{
	{"redfish+http://admin:" + password + "@127.0.0.1/redfish/v1/Systems/1", "credentials are not accepted"},
	{"redfish://admin:" + password + "/x?y#z@10.0.0.5/", "credentials are not accepted"}, // a password url.Parse would split
	{"redfish://" + password + "@10.0.0.5", "credentials are not accepted"},
	{"//admin:" + password + " @10.0.0.5", "want a URL scheme://host"}, // isURL accepts it, url() fails quoting it
	{"ipmi://10.0.0.6?password=" + password, "credentials are not accepted"},
	{"redfish+https://10.0.0.5/redfish/v1/Systems/1?cipher=3&User=" + password, "credentials are not accepted"},
	{"ftp://host/x", "with scheme redfish, redfish+https, redfish+http or ipmi"},
	{"https://10.0.0.5/redfish/v1/Systems/1", "with scheme redfish, redfish+https, redfish+http or ipmi"},
	{"not a url ::", "want a URL scheme://host"},
	{"10.0.0.5", "want a URL scheme://host"},
	{"redfish:10.0.0.5", "want a URL scheme://host"},
	{"redfish:///redfish/v1/Systems/1", "want a URL scheme://host"},
	{"redfish://", "want a URL scheme://host"},
	{"redfish://10.0.0.5:0/", "port must be a number from 1 to 65535"},
	{"redfish://10.0.0.5:65536/", "port must be a number from 1 to 65535"},
	{"ipmi://10.0.0.5:/", "port must be a number from 1 to 65535"},
	{"redfish://10.0.0.5:99999999999999999999999/", "port must be a number from 1 to 65535"},
	{"redfish://fd00::5/redfish/v1/Systems/1", "IPv6 address must be in brackets"},
	{"redfish://[fe80::1%25eth0]/", "IPv6 address must be in brackets and without a zone"},
	{"ipmi://10.0.0.6/x", "none for ipmi"},
	{"redfish://10.0.0.5/redfish/v1/Managers/1", "/redfish/v1/Systems/<ID> or none for redfish"},
	{"redfish://10.0.0.5/redfish/v1/Systems/1#frag", "no fragment"},
}

// goodAddresses are accepted by bmc.ParseEndpoint and at admission.
var goodAddresses = []string{
	"redfish://10.0.0.5/redfish/v1/Systems/1",
	"redfish://10.0.0.5",
	"redfish+http://127.0.0.1:8000/redfish/v1/Systems/1",
	"redfish+https://bmc-7.rack1.example:8443/redfish/v1/Systems/System.Embedded.1/",
	"redfish://[::1]/redfish/v1/Systems/1",
	"redfish://[fd00::5]:443",
	"ipmi://10.0.0.1:623",
	"ipmi://10.0.0.6?cipher=17&privilege=operator",
	"REDFISH://BMC.example/redfish/v1/Systems",
}

// badTasks are specs (BMC address valid) that job.Spec.Validate refuses,
// with the field the API server names and the words of its refusal.
func badTasks() []struct {
	name        string
	spec        job.Spec
	field, want string
} {
	yes := true
	one := func(ts ...task.Spec) job.Spec { return job.Spec{BMC: "ipmi://10.0.0.6", Tasks: ts} }
	wait := func(p task.WaitForBootPolicy) task.Spec {
		return task.Spec{WaitForBoot: &task.WaitForBootAction{SystemUUID: "4c4c4544-0042-3510-8052-b4c04f565432", WaitForBootPolicy: p}}
	}
	fw := func(uri, component, version string) task.Spec {
		return task.Spec{FirmwareUpdate: &task.FirmwareUpdateAction{ImageURI: uri, Component: component, Version: version}}
	}
	return []struct {
		name        string
		spec        job.Spec
		field, want string
	}{
		{"two actions", one(task.Spec{Power: &task.PowerAction{Op: task.PowerOn}, Reachable: &task.ReachableAction{}}), "spec.tasks[0]", "exactly one of the fields"},
		{"no action", one(task.Spec{Name: "nothing"}), "spec.tasks[0]", "exactly one of the fields"},
		{"waitForBoot without a systemUUID", one(task.Spec{Power: &task.PowerAction{Op: task.PowerOn}}, task.Spec{WaitForBoot: &task.WaitForBootAction{}}),
			"spec.tasks", "a waitForBoot task needs a systemUUID"},
		{"http boot from ftp", one(task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "ftp://boot.example/ipxe.efi"}}),
			"spec.tasks", "uri must be an http:// or https:// URL"},
		{"http boot with credentials", one(task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "https://admin:" + password + "@boot.example/ipxe.efi", EmulateOnce: &yes}}),
			"spec.tasks", "uri must be an http:// or https:// URL with a host, without spaces, credentials"},
		{"http boot uri url() cannot parse", one(task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "//u:" + password + " @boot.example/x"}}),
			"spec.tasks", "uri must be an http:// or https:// URL"},
		{"http boot without a host", one(task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "https:///ipxe.efi"}}),
			"spec.tasks", "uri must be an http:// or https:// URL"},
		{"firmware image with user info", one(fw("https://u:"+password+"@fw.example/bmc.bin", "BMC", "1.2")),
			"spec.tasks", "imageURI must be an http:// or https:// URL with a host, without user info"},
		{"firmware image not a URL", one(fw("bmc.bin", "BMC", "1.2")), "spec.tasks", "imageURI must be an http:// or https:// URL"},
		{"firmware component a path", one(fw("https://fw.example/bmc.bin", "/redfish/v1/UpdateService/FirmwareInventory/BMC", "1.2")),
			"spec.tasks", "needs a component (a firmware inventory ID, not a path) and a version"},
		{"firmware without a version", one(fw("https://fw.example/bmc.bin", "BMC", "")), "spec.tasks", "and a version"},
		{"bios verifyOnly without attributes", one(task.Spec{BIOS: &task.BIOSAction{VerifyOnly: true}}), "spec.tasks", "verifyOnly needs attributes"},
		{"waitForBoot mode without signals", one(wait(task.WaitForBootPolicy{Mode: task.BootAnyOf})), "spec.tasks", "with a mode needs signals"},
		{"first deadline from PreviousSignal", one(wait(task.WaitForBootPolicy{Deadlines: []task.SignalDeadline{
			{Signal: "IPXEScriptFetched", Within: task.Duration{Duration: time.Minute}, From: task.DeadlineFromPreviousSignal}}})),
			"spec.tasks", "first deadline cannot be from PreviousSignal"},
		{"timeout over 7 days", one(task.Spec{Reachable: &task.ReachableAction{}, Timeout: task.Duration{Duration: 169 * time.Hour}}),
			"spec.tasks", "timeout must be at most 7 days"},
		{"retryBackoff over 1h", one(wait(task.WaitForBootPolicy{Retries: 1, RetryBackoff: task.Duration{Duration: 61 * time.Minute}})),
			"spec.tasks", "retryBackoff at most 1h"},
	}
}

// goodSpec uses every rule's field in a way the runtime accepts.
func goodSpec() job.Spec {
	yes := true
	return job.Spec{
		BMC: "redfish+http://127.0.0.1:8000/redfish/v1/Systems/1", CredentialsRef: "bmc-1",
		SystemUUID: "4c4c4544-0042-3510-8052-b4c04f565432",
		Tasks: []task.Spec{
			{Power: &task.PowerAction{Op: task.PowerOff}, Timeout: task.Duration{Duration: 168 * time.Hour}},
			{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "https://boot.example:8443/ipxe.efi?arch=x86_64", EmulateOnce: &yes}},
			{BootDevice: &task.BootDeviceAction{Device: task.BootPXE}},
			{FirmwareUpdate: &task.FirmwareUpdateAction{ImageURI: "https://fw.example/bmc.bin?X-Amz-Signature=abc", Component: "BMC", Version: "1.2.3"}},
			{BIOS: &task.BIOSAction{Attributes: map[string]string{"BootMode": "Uefi"}, VerifyOnly: true}},
			{BIOS: &task.BIOSAction{}},
			{Power: &task.PowerAction{Op: task.PowerOn}},
			{WaitForBoot: &task.WaitForBootAction{WaitForBootPolicy: task.WaitForBootPolicy{
				Mode: task.BootAnyOf, Signals: []string{"IPXEScriptFetched"}, Retries: 2, RetryBackoff: task.Duration{Duration: time.Hour},
				Deadlines: []task.SignalDeadline{
					{Signal: "IPXEScriptFetched", Within: task.Duration{Duration: 5 * time.Minute}},
					{Signal: "BootStateReceived", Within: task.Duration{Duration: 10 * time.Minute}, From: task.DeadlineFromPreviousSignal},
				},
			}}},
		},
	}
}

// requireRefused checks that err is the API server's 422 naming field, whose
// answer (message and causes) contains want and never the password.
func requireRefused(t *testing.T, err error, field, want string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
	var se apierrors.APIStatus
	require.True(t, errors.As(err, &se))
	st := se.Status()
	var fields []string
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			fields = append(fields, c.Field)
		}
	}
	assert.Contains(t, fields, field, "the refusal names the field: %v", err)
	assert.Contains(t, err.Error(), want)
	whole, jerr := json.Marshal(st)
	require.NoError(t, jerr)
	assert.NotContains(t, string(whole), password, "the API server's answer repeats the password")
	t.Logf("refused: %v", err)
}

func TestBMCAddressAdmissionOnRealAPIServer(t *testing.T) {
	env := apiServer.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	for i, c := range badAddresses {
		t.Run(c.addr, func(t *testing.T) {
			_, perr := bmc.ParseEndpoint(c.addr)
			require.Error(t, perr, "the runtime must refuse it too")
			obj := bmcJob(job.Spec{BMC: c.addr, Tasks: []task.Spec{{Reachable: &task.ReachableAction{}}}})
			obj.Namespace, obj.Name = ns, fmt.Sprintf("bad-%d", i)
			requireRefused(t, env.Client.Create(ctx, obj), "spec.bmc", c.want)
		})
	}
	for i, addr := range goodAddresses {
		t.Run(addr, func(t *testing.T) {
			_, perr := bmc.ParseEndpoint(addr)
			require.NoError(t, perr, "the runtime must accept it too")
			obj := bmcJob(job.Spec{BMC: addr, Tasks: []task.Spec{{Reachable: &task.ReachableAction{}}}})
			obj.Namespace, obj.Name = ns, fmt.Sprintf("good-%d", i)
			require.NoError(t, env.Client.Create(ctx, obj))
		})
	}
}

func TestTaskShapeAdmissionOnRealAPIServer(t *testing.T) {
	env := apiServer.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	for i, c := range badTasks() {
		t.Run(c.name, func(t *testing.T) {
			require.Error(t, c.spec.Validate(), "the runtime must refuse it too")
			obj := bmcJob(c.spec)
			obj.Namespace, obj.Name = ns, fmt.Sprintf("bad-%d", i)
			requireRefused(t, env.Client.Create(ctx, obj), c.field, c.want)
		})
	}
	good := goodSpec()
	require.NoError(t, good.Validate())
	obj := bmcJob(good)
	obj.Namespace = ns
	require.NoError(t, env.Client.Create(ctx, obj), "a spec using every rule's field as the runtime allows is admitted")
}

// warnings collects the API server's warning headers.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.list...)
}

// A password put where no field takes it: spec.password is pruned (the
// schema does not preserve unknown fields), refused under strict field
// validation (kubectl's default), and a warning otherwise; a credentialsRef
// given as an object is refused (it is a string). No answer repeats the
// password, and none is stored.
func TestStrayPasswordOnRealAPIServer(t *testing.T) {
	env := apiServer.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	cfg := rest.CopyConfig(env.Config)
	w := &warnings{}
	cfg.WarningHandlerWithContext = w
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	res := dyn.Resource(schema.GroupVersionResource{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Resource: "bmcjobs"}).Namespace(ns)
	obj := func(name string, spec map[string]any) *unstructured.Unstructured {
		spec["bmc"] = "redfish://10.0.0.5/redfish/v1/Systems/1"
		spec["tasks"] = []any{map[string]any{"reachable": map[string]any{}}}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.GroupVersion.String(), "kind": "BMCJob",
			"metadata": map[string]any{"name": name}, "spec": spec,
		}}
	}
	noPassword := func(t *testing.T, err error) {
		t.Helper()
		var se apierrors.APIStatus
		require.True(t, errors.As(err, &se), "%v", err)
		whole, jerr := json.Marshal(se.Status())
		require.NoError(t, jerr)
		assert.NotContains(t, string(whole), password)
	}

	t.Run("strict", func(t *testing.T) {
		_, err := res.Create(ctx, obj("strict", map[string]any{"password": password}), metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
		require.Error(t, err)
		assert.True(t, apierrors.IsBadRequest(err), "strict field validation refuses an unknown field: %v", err)
		assert.Contains(t, err.Error(), `unknown field "spec.password"`)
		noPassword(t, err)
		t.Logf("refused: %v", err)
	})
	t.Run("warn", func(t *testing.T) {
		before := len(w.all())
		got, err := res.Create(ctx, obj("warn", map[string]any{"password": password}), metav1.CreateOptions{FieldValidation: metav1.FieldValidationWarn})
		require.NoError(t, err, "admitted, the unknown field pruned")
		_, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "password")
		assert.False(t, found, "spec.password is pruned")
		stored, err := res.Get(ctx, "warn", metav1.GetOptions{})
		require.NoError(t, err)
		data, err := json.Marshal(stored.Object)
		require.NoError(t, err)
		assert.NotContains(t, string(data), password, "nothing of it is stored")
		ws := w.all()[before:]
		assert.True(t, containsAny(ws, `unknown field "spec.password"`), "a warning names the field: %q", ws)
		assert.False(t, containsAny(ws, password), "no warning repeats the password: %q", ws)
		t.Logf("warnings: %q", ws)
	})
	t.Run("credentialsRef object", func(t *testing.T) {
		_, err := res.Create(ctx, obj("credref", map[string]any{"credentialsRef": map[string]any{"name": "bmc-1", "password": password}}), metav1.CreateOptions{})
		requireRefused(t, err, "spec.credentialsRef", "must be of type string")
		noPassword(t, err)
	})
}

// The spec.bmc rules agree with bmc.ParseEndpoint, in process (the API
// server's own CEL validator, no binaries needed): every address the
// runtime refuses in the lists above is refused at admission, naming
// spec.bmc, and every address it accepts is admitted.
func TestBMCAddressRulesAgreeWithParseEndpoint(t *testing.T) {
	v := newValidator(t)
	spec := func(addr string) *v1alpha1.BMCJob {
		return bmcJob(job.Spec{BMC: addr, Tasks: []task.Spec{{Reachable: &task.ReachableAction{}}}})
	}
	for _, c := range badAddresses {
		_, perr := bmc.ParseEndpoint(c.addr)
		assert.Error(t, perr, "%q: the runtime accepts it", c.addr)
		errs := v.validate(t, spec(c.addr))
		assert.True(t, containsAny(errs, "spec.bmc: Invalid value: "), "%q: want a spec.bmc refusal, got %q", c.addr, errs)
		assert.True(t, containsAny(errs, c.want), "%q: want %q, got %q", c.addr, c.want, errs)
		assert.False(t, containsAny(errs, password), "%q: a refusal repeats the password: %q", c.addr, errs)
	}
	for _, addr := range goodAddresses {
		_, perr := bmc.ParseEndpoint(addr)
		assert.NoError(t, perr, addr)
		assert.Empty(t, v.validate(t, spec(addr)), addr)
	}
	for _, c := range badTasks() {
		assert.Error(t, c.spec.Validate(), "%s: the runtime accepts it", c.name)
		assert.True(t, containsAny(v.validate(t, bmcJob(c.spec)), c.want), "%s: want %q", c.name, c.want)
	}
	good := goodSpec()
	assert.NoError(t, good.Validate())
	assert.Empty(t, v.validate(t, bmcJob(good)))
}

// FuzzBMCAddressRules: the spec.bmc rules never refuse an address the
// runtime accepts (but for the documented differences: surrounding spaces,
// a port written with more than 5 digits), and no URL rule (spec.bmc, a
// boot uri, a firmware imageURI) ever fails to evaluate: the API server
// quotes an evaluation error, and url()'s repeats the string (it found
// "// ", which isURL accepts and url() cannot parse).
func FuzzBMCAddressRules(f *testing.F) {
	for _, c := range badAddresses {
		f.Add(c.addr)
	}
	for _, a := range goodAddresses {
		f.Add(a)
	}
	f.Add("redfish://h/redfish/v1/Systems//")
	f.Add("ipmi://[::1]:623/")
	f.Add("redfish://h?")
	f.Add("redfish://h/?a=1&a=2")
	f.Add("// ")
	f.Add("redfish://h?a#%zz")
	f.Add("https://boot.example/ipxe.efi#x")
	var (
		once sync.Once
		v    *validator
	)
	f.Fuzz(func(t *testing.T, addr string) {
		if len(addr) == 0 || len(addr) > job.MaxBMCLength || !utf8.ValidString(addr) {
			return // the schema's bounds; JSON would change invalid UTF-8
		}
		once.Do(func() { v = newValidator(t) })
		errs := v.validate(t, bmcJob(job.Spec{BMC: addr, Tasks: []task.Spec{{Reachable: &task.ReachableAction{}}}}))
		uris := bmcJob(job.Spec{BMC: "ipmi://10.0.0.6", Tasks: []task.Spec{
			{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: addr}},
			{FirmwareUpdate: &task.FirmwareUpdateAction{ImageURI: addr, Component: "BMC", Version: "1"}},
		}})
		for _, e := range append(v.validate(t, uris), errs...) {
			if strings.Contains(e, "evaluating rule") || strings.Contains(e, "cost") {
				t.Fatalf("%q: a rule failed to evaluate: %s", addr, e)
			}
		}
		ep, perr := bmc.ParseEndpoint(addr)
		if perr != nil || len(errs) == 0 {
			return
		}
		if strings.TrimSpace(addr) != addr || ep.Port != 0 && !strings.Contains(addr, fmt.Sprintf(":%d", ep.Port)) {
			return // documented: admission is stricter here
		}
		t.Fatalf("%q: the runtime accepts it, admission refuses: %q", addr, errs)
	})
}
