package controller_test

// Credential rotation through the kit (docs/kubernetes.md, "Credential
// rotation"): the opt-in RBAC of config/rotation, and a rotateCredentials
// BMCJob on the real kube-apiserver whose controller process is SIGKILLed
// between the BMC's change and the promotion.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
	"github.com/bmckit/bmckit/contrib/kubernetes/secretcreds"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
)

// rotationDir holds the opt-in RBAC for rotation, applied beside config/rbac.
const rotationDir = "../config/rotation"

// Environment of TestHelperRotationProcess.
const (
	envRotationHelper = "BMCKIT_KUBETEST_ROTATION"
	envImpersonate    = "BMCKIT_KUBETEST_IMPERSONATE"
)

// The generated role does not let the controller write Secrets; the opt-in
// role grants get and update on them, and its kustomization lists its files.
func TestRotationRBACIsOptIn(t *testing.T) {
	secretVerbs := func(objs []client.Object) []string {
		var out []string
		for _, o := range objs {
			if cr, ok := o.(*rbacv1.ClusterRole); ok {
				for _, r := range cr.Rules {
					if slices.Contains(r.APIGroups, "") && slices.Contains(r.Resources, "secrets") {
						out = append(out, r.Verbs...)
					}
				}
			}
		}
		return out
	}
	assert.ElementsMatch(t, []string{"get", "list", "watch"}, secretVerbs(rbacObjects(t, "role.yaml")), "config/rbac: read Secrets only")
	files := rotationFiles(t)
	assert.ElementsMatch(t, []string{"get", "update"}, secretVerbs(rbacObjectsIn(t, rotationDir, files...)), "config/rotation")
	ents, err := os.ReadDir(rotationDir)
	require.NoError(t, err)
	var all []string
	for _, e := range ents {
		if e.Name() != "kustomization.yaml" {
			all = append(all, e.Name())
		}
	}
	assert.ElementsMatch(t, all, files, "kustomization.yaml lists every file of config/rotation")
}

// rotationFiles is the resources list of config/rotation's kustomization.
func rotationFiles(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(rotationDir + "/kustomization.yaml")
	require.NoError(t, err)
	var files []string
	for _, l := range strings.Split(string(data), "\n") {
		if f, ok := strings.CutPrefix(l, "- "); ok {
			files = append(files, strings.TrimSpace(f))
		}
	}
	require.NotEmpty(t, files)
	return files
}

// applyRotationRBAC applies config/rotation beside applyRBAC's objects in
// namespace ns, and waits until the ServiceAccount (cfg) may update a
// Secret there.
func applyRotationRBAC(t *testing.T, c client.Client, cfg *rest.Config, ns, secret string) {
	t.Helper()
	for _, o := range rbacObjectsIn(t, rotationDir, rotationFiles(t)...) {
		createMoved(t, c, ns, o)
	}
	sac, err := client.New(cfg, client.Options{Scheme: schemeOf()})
	require.NoError(t, err)
	waitFor(t, 30*time.Second, "the rotation binding to take effect", func() bool {
		var sec corev1.Secret
		if sac.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: secret}, &sec) != nil {
			return false
		}
		return sac.Update(context.Background(), &sec, client.DryRunAll) == nil
	})
}

func rotationJob(ns, name, bmcURL, secret string, mode task.RotationMode) *v1alpha1.BMCJob {
	o := &v1alpha1.BMCJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	o.Spec.Spec = job.Spec{BMC: bmcURL, CredentialsRef: secret, Tasks: []task.Spec{
		{RotateCredentials: &task.RotateCredentialsAction{Mode: mode}},
	}}
	return o
}

// hexRows matches the end of a hex.Dump row's text column and the start of
// the next row (its offset and hex bytes), the newline raw or escaped.
var hexRows = regexp.MustCompile(`\|(?:\n|\\n)[0-9a-f]{8}  [0-9a-f ]+\|`)

// safeBuffer collects a child process's output.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A rotateCredentials BMCJob (password mode, then account mode) run by the
// kit's controller in a child process, as config/rbac's ServiceAccount with config/rotation bound, on
// redfishtest with a lock-out after 5 failed logins. The child is SIGKILLed
// once the BMC took the new password and before the promotion: the proof
// login on the new password is held at the BMC, the job's stage is
// ChangeSent and the Secret holds the pending keys. A new child (the same
// identity, as a pod restarted in place) finishes it: Succeeded, the
// Secret's current password is the one the BMC takes, no pending keys, the
// old password refused (account mode: the old account deleted), no account
// locked, and neither password in the BMCJob, the events or the children's
// logs (verbosity 10).
func TestRotationSIGKILLOnRealAPIServer(t *testing.T) {
	for _, mode := range []task.RotationMode{task.RotationPassword, task.RotationAccount} {
		t.Run(string(mode), func(t *testing.T) { rotationSIGKILL(t, mode) })
	}
}

func rotationSIGKILL(t *testing.T, mode task.RotationMode) {
	env := apiServer.Get(t)
	ns := env.Namespace(t)
	c := adminClient(t, env)
	ctx := context.Background()
	// 0: before the account's change (a PATCH, or the new account's POST),
	// 1: the change seen, 2: the proof login held.
	var gate atomic.Int32
	sim := newSim(redfishtest.Config{Accounts: redfishtest.AccountsConfig{LockoutThreshold: 5},
		Faults: redfishtest.Faults{SlowDelay: 10 * time.Minute, Func: func(method, path string) redfishtest.Fault {
			switch {
			case (method == http.MethodPatch || method == http.MethodPost) && strings.Contains(path, "/AccountService/Accounts"):
				gate.CompareAndSwap(0, 1)
			case method == http.MethodPost && strings.HasSuffix(path, "/SessionService/Sessions") && gate.CompareAndSwap(1, 2):
				return redfishtest.FaultSlow
			}
			return redfishtest.FaultNone
		}}})
	defer sim.Close()
	old := sim.Credentials()
	require.NoError(t, c.Create(ctx, simSecret(ns, "bmc", old)))
	sa := applyRBAC(t, c, env.Config, ns)
	applyRotationRBAC(t, c, sa, ns, "bmc")

	var logs safeBuffer
	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRotationProcess$", "-test.v")
		cmd.Env = append(os.Environ(), envRotationHelper+"=1", envKubeconfig+"="+env.Kubeconfig, envNamespace+"="+ns,
			envReplica+"=replica-0", envImpersonate+"="+sa.Impersonate.UserName)
		cmd.Stdout, cmd.Stderr = &logs, &logs
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		})
		return cmd
	}
	first := start()
	began := time.Now()
	require.NoError(t, c.Create(ctx, rotationJob(ns, "rotate", sim.Address("1"), "bmc", mode)))
	waitFor(t, time.Minute, "the proof login", func() bool { return gate.Load() == 2 })

	// Where the kill lands: the BMC has the pending password, nothing is
	// promoted.
	var sec corev1.Secret
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "bmc"}, &sec))
	next := bmc.Credentials{Username: string(sec.Data[secretcreds.PendingUsernameKey]), Password: string(sec.Data[secretcreds.PendingPasswordKey])}
	pending := next.Password
	require.NotEmpty(t, pending, "the Secret holds the pending password")
	require.Equal(t, old.Password, string(sec.Data[secretcreds.PasswordKey]), "not promoted yet")
	require.True(t, sim.AccountPasswordIs(next.Username, pending), "the BMC took the new password")
	if mode == task.RotationAccount {
		require.NotEqual(t, old.Username, next.Username, "a new account")
	} else {
		require.Equal(t, old.Username, next.Username)
	}
	st := getJob(t, c, ns, "rotate").Status
	require.Len(t, st.Tasks, 1)
	require.NotNil(t, st.Tasks[0].Rotation)
	require.Equal(t, task.RotationChangeSent, st.Tasks[0].Rotation.Stage)
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_, _ = first.Process.Wait()
	killedAt := time.Now()

	start()
	waitFor(t, time.Minute, "the job to finish", func() bool { return finished(c, ns, "rotate") })
	t.Logf("rotation killed %s after the job's creation, finished %s after the kill",
		killedAt.Sub(began).Round(100*time.Millisecond), time.Since(killedAt).Round(100*time.Millisecond))
	got := getJob(t, c, ns, "rotate")
	require.Equal(t, conditions.ResultSucceeded, got.Status.Result, "%s: %s", got.Status.Reason, got.Status.Message)
	assert.Equal(t, task.RotationDone, got.Status.Tasks[0].Rotation.Stage)

	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "bmc"}, &sec))
	assert.Equal(t, next, bmc.Credentials{Username: string(sec.Data[secretcreds.UsernameKey]), Password: string(sec.Data[secretcreds.PasswordKey])}, "the pending credentials promoted")
	assert.NotContains(t, sec.Data, secretcreds.PendingUsernameKey)
	assert.NotContains(t, sec.Data, secretcreds.PendingPasswordKey)
	var names []string
	for _, a := range sim.Accounts() {
		assert.False(t, a.Locked, "account %s locked", a.UserName)
		names = append(names, a.UserName)
	}
	if mode == task.RotationAccount {
		assert.NotContains(t, names, old.Username, "the old account deleted")
	}
	assert.Contains(t, names, next.Username)
	ep, err := bmc.ParseEndpoint(sim.Address("1"))
	require.NoError(t, err)
	d := redfish.NewDialer(redfish.Options{})
	ok, err := bmc.Accepts(ctx, d, ep, next)
	require.NoError(t, err)
	assert.True(t, ok, "the BMC takes the Secret's current password")
	ok, err = bmc.Accepts(ctx, d, ep, old)
	require.NoError(t, err)
	assert.False(t, ok, "the old password is refused")

	var evs corev1.EventList
	require.NoError(t, c.List(ctx, &evs, client.InNamespace(ns)))
	require.NotEmpty(t, evs.Items)
	out := logs.String()
	require.Contains(t, out, "job completed", "the children's logs were captured")
	if mode == task.RotationPassword {
		// The restarted controller's dial: the old password refused, the
		// pending one taken (bmc.PendingFallback).
		assert.Contains(t, out, "rotation in progress")
	}
	// client-go logs bodies at V(8) as hex dumps, 16 bytes a row: the
	// text columns joined, so that a password across two rows is found.
	shown := map[string]string{"events": mustJSON(t, evs), "job": mustJSON(t, got), "logs": out, "logs' hex dumps joined": hexRows.ReplaceAllString(out, "")}
	for where, text := range shown {
		for _, pw := range []string{old.Password, pending} {
			for _, l := range strings.Split(text, "\n") {
				if strings.Contains(l, pw) {
					t.Errorf("a password in the %s: %s", where, strings.ReplaceAll(l, pw, "<password>"))
				}
			}
		}
	}
	t.Logf("scanned %d events, %d bytes of logs", len(evs.Items), len(out))
}

// Without config/rotation, the ServiceAccount may not write the Secret:
// the rotation fails before it touches the BMC, with an error naming the
// opt-in, and the BMC keeps its password.
func TestRotationWithoutTheRotationRoleOnRealAPIServer(t *testing.T) {
	env := apiServer.Get(t)
	ns := env.Namespace(t)
	c := adminClient(t, env)
	var changes atomic.Int32
	sim := newSim(redfishtest.Config{Faults: redfishtest.Faults{Func: func(method, path string) redfishtest.Fault {
		if method == http.MethodPatch || method == http.MethodPost && !strings.HasSuffix(path, "/SessionService/Sessions") {
			changes.Add(1)
		}
		return redfishtest.FaultNone
	}}})
	defer sim.Close()
	old := sim.Credentials()
	require.NoError(t, c.Create(context.Background(), simSecret(ns, "bmc", old)))
	sa := applyRBAC(t, c, env.Config, ns)
	_, stop, err := runController(sa, ctlOpts{ns: ns, replica: "r1"})
	require.NoError(t, err)
	t.Cleanup(stop)
	require.NoError(t, c.Create(context.Background(), rotationJob(ns, "rotate", sim.Address("1"), "bmc", task.RotationPassword)))
	waitFor(t, time.Minute, "the job to finish", func() bool { return finished(c, ns, "rotate") })
	got := getJob(t, c, ns, "rotate")
	require.Equal(t, conditions.ResultFailed, got.Status.Result)
	assert.Contains(t, got.Status.Message, "config/rotation", "the message names the opt-in")
	assert.NotContains(t, got.Status.Message, old.Password)
	assert.Zero(t, changes.Load(), "no state-changing request reached the BMC")
	assert.True(t, sim.AccountPasswordIs(old.Username, old.Password))
}

// TestHelperRotationProcess is the controller process of
// TestRotationSIGKILLOnRealAPIServer; it runs only when started by it.
func TestHelperRotationProcess(t *testing.T) {
	if os.Getenv(envRotationHelper) != "1" {
		t.Skip("the controller subprocess of TestRotationSIGKILLOnRealAPIServer")
	}
	kc, err := os.ReadFile(os.Getenv(envKubeconfig))
	require.NoError(t, err)
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	require.NoError(t, err)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: os.Getenv(envImpersonate)}
	log := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{Verbosity: 10})
	_, stop, err := runController(cfg, ctlOpts{ns: os.Getenv(envNamespace), replica: os.Getenv(envReplica), lease: 6 * time.Second, log: log})
	require.NoError(t, err)
	defer stop()
	ctx, cancel := signalContext()
	defer cancel()
	<-ctx.Done()
}
