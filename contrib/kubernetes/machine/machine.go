// Package machine runs bmckit's monitor (package monitor) for Machine
// objects (api/v1alpha1): each Machine's BMC is read on the monitor's
// jittered interval, and what it found (the Contactable condition, the power
// state, the time of the last read) is written into the Machine's status.
//
// [Setup] adds to a manager a [Reconciler] that keeps the monitor's machines
// in step with the Machine objects, and a Runnable that runs the monitor and
// copies its records into the objects' status. Both run on the leader only:
// the monitor keeps its records in memory, so two replicas would each read
// every BMC.
package machine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/connpool"
	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
	"github.com/bmckit/bmckit/contrib/kubernetes/secretcreds"
	"github.com/bmckit/bmckit/monitor"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/timestamp"
)

// Options configures [Setup]. Pool or Dialer is required.
type Options struct {
	// Pool is the connection pool to read BMCs through: pass the job
	// Stepper's (controller.Controller.Stepper.Pool()), so a machine a job
	// is using is read on that job's session.
	Pool *connpool.Pool
	// Dialer is used when Pool is nil.
	Dialer bmc.Dialer
	// Credentials resolves "namespace/name" references. Defaults to
	// secretcreds.Resolver over the manager's client.
	Credentials bmc.CredentialsResolver
	// Interval is how often each machine is read (monitor.Config.Interval,
	// default 3 minutes).
	Interval time.Duration
	// SyncInterval is how often the monitor's records are copied into the
	// Machines' status. Defaults to 1s.
	SyncInterval time.Duration
}

// Setup adds the Machine controller and the monitor to mgr and returns the
// Reconciler.
func Setup(mgr ctrl.Manager, opts Options) (*Reconciler, error) {
	if opts.Pool == nil && opts.Dialer == nil {
		return nil, errors.New("machine: Options.Pool or Options.Dialer is required")
	}
	creds := opts.Credentials
	if creds == nil {
		creds = secretcreds.Resolver{Reader: mgr.GetClient()}
	}
	mon, err := monitor.New(monitor.Config{
		Store: memstore.New(), Pool: opts.Pool, Dialer: opts.Dialer, Credentials: creds,
		Interval: opts.Interval, Logger: mgr.GetLogger().WithName("monitor"),
	})
	if err != nil {
		return nil, err
	}
	r := &Reconciler{Client: mgr.GetClient(), Monitor: mon, SyncInterval: opts.SyncInterval}
	if err := mgr.Add(r); err != nil {
		return nil, err
	}
	if err := ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.Machine{}).Named("machine").Complete(r); err != nil {
		return nil, err
	}
	return r, nil
}

// Reconciler adds each Machine's BMC to the Monitor (and removes it when the
// Machine goes), and, as a leader-elected Runnable, runs the Monitor and
// writes its records into the Machines' status.
type Reconciler struct {
	Client  client.Client
	Monitor *monitor.Monitor
	// SyncInterval defaults to 1s.
	SyncInterval time.Duration

	mu      sync.Mutex
	objects map[types.NamespacedName]string // Machine -> BMC added for it
}

var (
	_ manager.Runnable               = (*Reconciler)(nil)
	_ manager.LeaderElectionRunnable = (*Reconciler)(nil)
)

// +kubebuilder:rbac:groups=bmckit.io,resources=machines,verbs=get;list;watch
// +kubebuilder:rbac:groups=bmckit.io,resources=machines/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &v1alpha1.Machine{}
	err := r.Client.Get(ctx, req.NamespacedName, obj)
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, r.forget(ctx, req.NamespacedName)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	ref := ""
	if obj.Spec.CredentialsRef != "" {
		ref = obj.Namespace + "/" + obj.Spec.CredentialsRef
	}
	r.mu.Lock()
	old, had := r.objects[req.NamespacedName]
	r.mu.Unlock()
	if had && old != obj.Spec.BMC {
		if err := r.forget(ctx, req.NamespacedName); err != nil {
			return ctrl.Result{}, err
		}
	}
	rec, err := r.Monitor.Add(ctx, obj.Spec.BMC, ref)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("machine %s: %w", req.NamespacedName, err)
	}
	r.mu.Lock()
	if r.objects == nil {
		r.objects = map[types.NamespacedName]string{}
	}
	r.objects[req.NamespacedName] = obj.Spec.BMC
	r.mu.Unlock()
	return ctrl.Result{}, r.writeStatus(ctx, obj, rec)
}

// forget removes the BMC of a Machine that is gone (or changed its BMC),
// unless another Machine names it too.
func (r *Reconciler) forget(ctx context.Context, key types.NamespacedName) error {
	r.mu.Lock()
	b, ok := r.objects[key]
	delete(r.objects, key)
	shared := false
	for _, other := range r.objects {
		shared = shared || other == b
	}
	r.mu.Unlock()
	if !ok || shared {
		return nil
	}
	return r.Monitor.Remove(ctx, b)
}

// writeStatus copies rec's status into obj's, with a patch when it changed.
func (r *Reconciler) writeStatus(ctx context.Context, obj *v1alpha1.Machine, rec *monitor.Machine) error {
	st := v1alpha1.MachineStatus{
		Conditions: rec.Status.Conditions,
		Power:      string(rec.Status.Power),
	}
	if rec.BMC == obj.Spec.BMC {
		st.ObservedGeneration = obj.Generation
	}
	if !rec.Status.LastReadTime.IsZero() {
		st.LastReadTime = timestamp.Ptr(rec.Status.LastReadTime)
	}
	if !rec.Status.LastAttemptTime.IsZero() {
		st.LastAttemptTime = timestamp.Ptr(rec.Status.LastAttemptTime)
	}
	// Compared as stored (JSON): decoded times differ from in-memory ones.
	if a, err := json.Marshal(st); err == nil {
		if b, err := json.Marshal(obj.Status); err == nil && bytes.Equal(a, b) {
			return nil
		}
	}
	base := obj.DeepCopy()
	obj.Status = st
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, obj, client.MergeFrom(base)))
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: the monitor
// reads every BMC, so one replica runs it.
func (r *Reconciler) NeedLeaderElection() bool { return true }

// Start runs the Monitor and copies its records into the Machines' status
// every SyncInterval, until ctx ends.
func (r *Reconciler) Start(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- r.Monitor.Start(ctx) }()
	every := r.SyncInterval
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return <-done
		case err := <-done:
			return err
		case <-t.C:
			r.sync(ctx)
		}
	}
}

// sync writes every known Machine's record into its status.
func (r *Reconciler) sync(ctx context.Context) {
	r.mu.Lock()
	objs := make(map[types.NamespacedName]string, len(r.objects))
	for k, v := range r.objects {
		objs[k] = v
	}
	r.mu.Unlock()
	log := ctrl.LoggerFrom(ctx).WithName("machine")
	for key, b := range objs {
		rec, err := r.Monitor.Get(ctx, b)
		if err != nil {
			continue // removed meanwhile
		}
		obj := &v1alpha1.Machine{}
		if err := r.Client.Get(ctx, key, obj); err != nil {
			continue
		}
		if err := r.writeStatus(ctx, obj, rec); err != nil && !apierrors.IsConflict(err) {
			log.Error(err, "writing the status", "machine", key.String())
		}
	}
}
