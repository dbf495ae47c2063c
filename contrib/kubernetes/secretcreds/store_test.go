package secretcreds_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/contrib/kubernetes/kubetest"
	"github.com/bmckit/bmckit/contrib/kubernetes/secretcreds"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/syslock"
	"github.com/bmckit/bmckit/task"
)

var apiServer kubetest.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	apiServer.Stop()
	os.Exit(code)
}

var (
	oldCreds    = bmc.Credentials{Username: "admin", Password: "Old-s3cret-77#a"}
	nextCreds   = bmc.Credentials{Username: "admin", Password: "Next-s3cret-91#b"}
	namespaceNo atomic.Int64
)

// secret makes a namespace and a Secret holding c for t: its reference.
func secret(t *testing.T, env *kubetest.Env, c bmc.Credentials) string {
	t.Helper()
	ctx := context.Background()
	ns := fmt.Sprintf("secretcreds-%d", namespaceNo.Add(1))
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.NoError(t, env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bmc"},
		Data: map[string][]byte{secretcreds.UsernameKey: []byte(c.Username), secretcreds.PasswordKey: []byte(c.Password)}}))
	return ns + "/bmc"
}

func storeOn(c client.Client) secretcreds.Store {
	return secretcreds.Store{Resolver: secretcreds.Resolver{Reader: c}, Client: c}
}

// The CredentialsStore contract on a real API server, and the Secret's
// keys after each change.
func TestStoreOnTheAPIServer(t *testing.T) {
	env := apiServer.Get(t)
	ctx := context.Background()
	ref := secret(t, env, oldCreds)
	s := storeOn(env.Client)
	data := func() map[string][]byte {
		var sec corev1.Secret
		require.NoError(t, env.Client.Get(ctx, types.NamespacedName{Namespace: ref[:len(ref)-4], Name: "bmc"}, &sec))
		return sec.Data
	}

	_, has, err := s.Pending(ctx, ref)
	require.NoError(t, err)
	assert.False(t, has)
	require.NoError(t, s.SetPending(ctx, ref, nextCreds))
	assert.Equal(t, nextCreds.Password, string(data()[secretcreds.PendingPasswordKey]))
	cur, err := s.Resolve(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, oldCreds, cur, "the current keys are untouched")

	wrong := bmc.Credentials{Username: "admin", Password: "Wrong-s3cret"}
	err = s.Promote(ctx, ref, wrong)
	require.ErrorIs(t, err, bmc.ErrPendingMismatch)
	assert.NotContains(t, err.Error(), "s3cret")
	require.NoError(t, s.Promote(ctx, ref, nextCreds))
	d := data()
	assert.Equal(t, nextCreds.Password, string(d[secretcreds.PasswordKey]))
	assert.NotContains(t, d, secretcreds.PendingUsernameKey)
	assert.NotContains(t, d, secretcreds.PendingPasswordKey)
	require.NoError(t, s.Promote(ctx, ref, nextCreds), "idempotent")
	require.NoError(t, s.SetPending(ctx, ref, oldCreds))
	require.NoError(t, s.DropPending(ctx, ref, oldCreds))
	_, has, _ = s.Pending(ctx, ref)
	assert.False(t, has)

	_, _, err = s.Pending(ctx, "nope/none")
	assert.ErrorContains(t, err, "nope/none")
}

// A Promote that read the Secret before another writer replaced the
// pending credentials: its Update conflicts (resourceVersion), it reads
// again, and refuses, instead of promoting what is no longer pending.
func TestStoreCompareAndSwap(t *testing.T) {
	env := apiServer.Get(t)
	ctx := context.Background()
	ref := secret(t, env, oldCreds)
	require.NoError(t, storeOn(env.Client).SetPending(ctx, ref, nextCreds))
	other := bmc.Credentials{Username: "admin", Password: "Other-s3cret-13#c"}

	raw, err := client.NewWithWatch(env.Config, client.Options{})
	require.NoError(t, err)
	var updates atomic.Int64
	racing := interceptor.NewClient(raw, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if updates.Add(1) == 1 { // another writer gets in between this one's read and update
				require.NoError(t, storeOn(env.Client).SetPending(ctx, ref, other))
			}
			return c.Update(ctx, obj, opts...)
		},
	})
	err = storeOn(racing).Promote(ctx, ref, nextCreds)
	require.ErrorIs(t, err, bmc.ErrPendingMismatch)
	assert.Equal(t, int64(1), updates.Load(), "the conflicting update was not retried blindly")
	s := storeOn(env.Client)
	cur, _ := s.Resolve(ctx, ref)
	assert.Equal(t, oldCreds, cur)
	p, has, _ := s.Pending(ctx, ref)
	require.True(t, has)
	assert.Equal(t, other, p, "the other writer's pending credentials stand")
}

// A rotation job on a fake BMC with its credentials in a Secret, its
// process dying after the proof (stage Proven stored): a new process
// promotes, and the Secret ends with the new password and no pending keys.
func TestRotationOnASecretWithARestart(t *testing.T) {
	env := apiServer.Get(t)
	ctx := context.Background()
	ref := secret(t, env, oldCreds)
	store := storeOn(env.Client)
	b := fake.New(fake.Options{Username: oldCreds.Username, Password: oldCreds.Password, Power: bmc.PowerOn})
	stepper := func() *job.Stepper {
		s, err := job.NewStepper(job.StepperConfig{Dialer: b, Credentials: store, Locks: syslock.NoLocking})
		require.NoError(t, err)
		return s
	}
	j := &job.Job{Name: "rotate", Generation: 1, Spec: job.Spec{BMC: "redfish://10.0.0.9/redfish/v1/Systems/1", CredentialsRef: ref,
		Tasks: []task.Spec{{RotateCredentials: &task.RotateCredentialsAction{}}}}}
	var stored job.Job // the host's object
	died := errors.New("died")
	persist := func(die bool) job.PersistFunc {
		return func(_ context.Context, cur *job.Job) error {
			b, err := json.Marshal(cur)
			require.NoError(t, err)
			stored = job.Job{}
			require.NoError(t, json.Unmarshal(b, &stored))
			if st := cur.Status.Tasks[0].Rotation; die && st != nil && st.Stage == task.RotationProven {
				return died
			}
			return nil
		}
	}
	first := stepper()
	for range 20 {
		res, err := first.Step(ctx, j, persist(true))
		if errors.Is(err, died) {
			break
		}
		require.NoError(t, err)
		require.False(t, res.Done, "the first process finished")
	}
	require.Equal(t, task.RotationProven, stored.Status.Tasks[0].Rotation.Stage)
	_, has, err := store.Pending(ctx, ref)
	require.NoError(t, err)
	require.True(t, has, "died before the promotion")

	second := stepper()
	for range 20 {
		cur := stored
		res, err := second.Step(ctx, &cur, persist(false))
		require.NoError(t, err)
		if res.Done {
			break
		}
	}
	require.Equal(t, "Succeeded", string(stored.Status.Result), stored.Status.Message)
	cur, err := store.Resolve(ctx, ref)
	require.NoError(t, err)
	assert.True(t, b.AccountPassword("admin", cur.Password), "the BMC takes the Secret's password")
	assert.False(t, b.AccountPassword("admin", oldCreds.Password))
	_, has, _ = store.Pending(ctx, ref)
	assert.False(t, has)
}

// secretWith is a Secret "ns/bmc" holding data.
func secretWith(data map[string]string) *corev1.Secret {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bmc"}, Data: map[string][]byte{}}
	for k, v := range data {
		sec.Data[k] = []byte(v)
	}
	return sec
}

// Resolve through a cache that still holds the Secret as it was before the
// promotion (pending keys beside the old password): it reads past the
// cache, and returns the promoted password, not the old one the BMC
// refuses. A Secret without pending keys is read from the cache alone.
func TestStoreResolveReadsPastAStaleCache(t *testing.T) {
	ctx := context.Background()
	stale := fakeclient.NewClientBuilder().WithObjects(secretWith(map[string]string{
		secretcreds.UsernameKey: oldCreds.Username, secretcreds.PasswordKey: oldCreds.Password,
		secretcreds.PendingUsernameKey: nextCreds.Username, secretcreds.PendingPasswordKey: nextCreds.Password,
	})).Build()
	var direct atomic.Int64
	fresh := interceptor.NewClient(fakeclient.NewClientBuilder().WithObjects(secretWith(map[string]string{
		secretcreds.UsernameKey: nextCreds.Username, secretcreds.PasswordKey: nextCreds.Password,
	})).Build(), interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		direct.Add(1)
		return c.Get(ctx, key, obj, opts...)
	}})
	s := secretcreds.Store{Resolver: secretcreds.Resolver{Reader: stale}, Client: fresh}
	got, err := s.Resolve(ctx, "ns/bmc")
	require.NoError(t, err)
	assert.Equal(t, nextCreds, got, "the promoted credentials, not the cache's")
	assert.Equal(t, int64(1), direct.Load())

	quiet := fakeclient.NewClientBuilder().WithObjects(secretWith(map[string]string{
		secretcreds.UsernameKey: oldCreds.Username, secretcreds.PasswordKey: oldCreds.Password,
	})).Build()
	s.Resolver.Reader = quiet
	got, err = s.Resolve(ctx, "ns/bmc")
	require.NoError(t, err)
	assert.Equal(t, oldCreds, got)
	assert.Equal(t, int64(1), direct.Load(), "no pending keys: no read past the cache")
}

// An Update the API server forbids (the controller without the rotation
// role) is a permanent error naming the opt-in, and no value.
func TestStoreForbiddenNamesTheRotationRole(t *testing.T) {
	ctx := context.Background()
	c := interceptor.NewClient(fakeclient.NewClientBuilder().WithObjects(secretWith(map[string]string{
		secretcreds.UsernameKey: oldCreds.Username, secretcreds.PasswordKey: oldCreds.Password,
	})).Build(), interceptor.Funcs{Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
		return apierrors.NewForbidden(corev1.Resource("secrets"), "bmc", errors.New("no update"))
	}})
	err := storeOn(c).SetPending(ctx, "ns/bmc", nextCreds)
	require.Error(t, err)
	assert.False(t, bmc.IsTransient(err), "not retried: %v", err)
	assert.Contains(t, err.Error(), "ns/bmc")
	assert.Contains(t, err.Error(), "config/rotation")
	assert.NotContains(t, err.Error(), "s3cret")
}
