package kubetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/bmckit/bmckit/contrib/kubernetes/kubetest"
)

// The API server killed and started again serves the same address with the
// same certificates and the same etcd: a client made before the kill (the
// admin client, and one from the kubeconfig file another process would
// read) works after it, and the objects are still there; while it is down,
// requests fail.
func TestRestartAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no real API server")
	}
	env := kubetest.Start(t, kubetest.Options{})
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "survives"}, Data: map[string]string{"k": "v"}}
	require.NoError(t, env.Client.Create(ctx, cm))
	kc, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	require.NoError(t, err)
	other, err := client.New(kc, client.Options{})
	require.NoError(t, err)
	host := env.Config.Host

	require.NoError(t, env.KillAPIServer())
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = env.Client.Get(gctx, types.NamespacedName{Namespace: "default", Name: "survives"}, &corev1.ConfigMap{})
	cancel()
	require.Error(t, err, "the killed API server answers nothing")
	require.Error(t, env.KillAPIServer(), "killed twice")

	down, err := env.StartAPIServer()
	require.NoError(t, err)
	t.Logf("down %s (kill to ready)", down.Round(10*time.Millisecond))
	assert.Equal(t, host, env.Config.Host, "same address")
	for _, c := range []client.Client{env.Client, other} {
		var got corev1.ConfigMap
		require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: "default", Name: "survives"}, &got), "same certificates, same etcd")
		assert.Equal(t, "v", got.Data["k"])
	}
	_, err = env.StartAPIServer()
	require.Error(t, err, "started while running")

	outage, err := env.RestartAPIServer(time.Second)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, outage, time.Second)
	require.NoError(t, other.Get(ctx, types.NamespacedName{Namespace: "default", Name: "survives"}, &corev1.ConfigMap{}))
}
