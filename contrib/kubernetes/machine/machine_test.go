package machine_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/bmckit/bmckit/bmc/redfish"
	"github.com/bmckit/bmckit/bmc/redfish/redfishtest"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
	"github.com/bmckit/bmckit/contrib/kubernetes/kubetest"
	"github.com/bmckit/bmckit/contrib/kubernetes/machine"
	"github.com/bmckit/bmckit/monitor"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// Machines on a real API server, read by the monitor through the kit: one
// with the right Secret becomes Contactable=True with the simulator's power
// state and a last read time; one whose Secret holds a wrong password
// becomes Contactable=False, reason Unauthorized; the password is nowhere in
// either object.
func TestMachinesOnRealAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no real API server")
	}
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	env := kubetest.Start(t, kubetest.Options{CRDDirectoryPaths: []string{"../config/crd"}, Scheme: scheme})
	c := env.Client
	ctx := context.Background()
	sim := redfishtest.NewServer(redfishtest.Config{Systems: 2})
	defer sim.Close()
	sim.SetPower("1", "On")
	cr := sim.Credentials()
	ns := "machines"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	for name, pass := range map[string]string{"good": cr.Password, "bad": "Wrong-Pw-1"} {
		require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Data: map[string][]byte{"username": []byte(cr.Username), "password": []byte(pass)}}))
	}

	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	require.NoError(t, err)
	_, err = machine.Setup(mgr, machine.Options{Dialer: redfish.NewDialer(redfish.Options{}), SyncInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()

	for name, system := range map[string]string{"good": "1", "bad": "2"} {
		m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		m.Spec.BMC, m.Spec.CredentialsRef = sim.Address(system), name
		require.NoError(t, c.Create(ctx, m))
	}
	get := func(name string) *v1alpha1.Machine {
		m := &v1alpha1.Machine{}
		require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, m))
		return m
	}
	contactable := func(name string) *conditions.Condition {
		return conditions.Get(get(name).Status.Conditions, monitor.TypeContactable)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		g, b := contactable("good"), contactable("bad")
		if g != nil && g.Status != conditions.Unknown && b != nil && b.Status != conditions.Unknown {
			break
		}
		require.False(t, time.Now().After(deadline), "no read reported in time: %+v %+v", get("good").Status, get("bad").Status)
		<-time.After(50 * time.Millisecond)
	}
	good, bad := get("good"), get("bad")
	assert.Equal(t, conditions.True, contactable("good").Status)
	assert.Equal(t, "On", good.Status.Power)
	assert.NotNil(t, good.Status.LastReadTime)
	assert.Equal(t, good.Generation, good.Status.ObservedGeneration)
	assert.Equal(t, conditions.False, contactable("bad").Status)
	assert.Equal(t, monitor.ReasonUnauthorized, contactable("bad").Reason)
	assert.Nil(t, bad.Status.LastReadTime)
	for _, m := range []*v1alpha1.Machine{good, bad} {
		assert.NotContains(t, contactable(m.Name).Message, cr.Password)
		assert.NotContains(t, contactable(m.Name).Message, "Wrong-Pw-1")
	}
}
