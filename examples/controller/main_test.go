package main

import (
	"bytes"
	"context"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
	"github.com/bmckit/bmckit/contrib/kubernetes/kubetest"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
)

// syncBuffer is a bytes.Buffer safe for the controller's log goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The documented way to try the controller: --simulator=1 against a real
// API server. The log names the simulated BMC's spec.bmc; a BMCJob on it
// with credentialsRef bmckit-simulator succeeds; log lines carry
// timestamps; the simulator's password is never logged.
func TestSimulatorFlagOnRealAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no real API server")
	}
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	env := kubetest.Start(t, kubetest.Options{CRDDirectoryPaths: []string{"../../contrib/kubernetes/config/crd"}, Scheme: scheme})

	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--kubeconfig", env.Kubeconfig, "--simulator=1", "--leader-elect=false",
			"--metrics-bind-address=0", "--health-probe-bind-address=0"}, &logs)
	}()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	addr := regexp.MustCompile(`"spec.bmc"="([^"]+)"`)
	var bmcURL string
	deadline := time.Now().Add(time.Minute)
	for bmcURL == "" {
		if m := addr.FindStringSubmatch(logs.String()); m != nil {
			bmcURL = m[1]
			break
		}
		require.False(t, time.Now().After(deadline), "no simulated BMC logged:\n%s", logs.String())
		<-time.After(50 * time.Millisecond)
	}
	obj := &v1alpha1.BMCJob{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "netboot"}}
	obj.Spec.Spec = job.Spec{BMC: bmcURL, CredentialsRef: SimulatorSecret, Tasks: []task.Spec{
		{Power: &task.PowerAction{Op: task.PowerOff}},
		{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}},
		{Power: &task.PowerAction{Op: task.PowerOn}},
	}}
	require.NoError(t, env.Client.Create(context.Background(), obj))
	deadline = time.Now().Add(2 * time.Minute)
	for {
		got := &v1alpha1.BMCJob{}
		require.NoError(t, env.Client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "netboot"}, got))
		if conditions.IsTrue(got.Status.Conditions, conditions.TypeCompleted) {
			assert.Equal(t, conditions.ResultSucceeded, got.Status.Result, "%+v", got.Status)
			break
		}
		require.False(t, time.Now().After(deadline), "not done: %+v", got.Status)
		<-time.After(100 * time.Millisecond)
	}
	out := logs.String()
	assert.Regexp(t, `"ts"="\d{4}-\d\d-\d\d`, out, "log lines carry timestamps")
	assert.NotContains(t, out, "redfishtest-secret")
}
