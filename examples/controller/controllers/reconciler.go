// Package controllers is a controller-runtime controller for the BMCJob
// custom resource (api/v1alpha1): it drives each object's job with
// bmckit's job.Stepper and keeps the job's status in the object's status.
//
// # What it shows
//
//   - [Reconciler] builds a job.Job from the object ([JobFor]), advances it
//     with job.Stepper.StepPatch and stores each change with a merge patch of
//     the status subresource, from the status before the change to the
//     status after it (so no condition change is ever lost).
//   - "Step again at once" becomes a positive RequeueAfter ([Requeue]): in
//     controller-runtime a zero RequeueAfter means "do not requeue".
//   - A finalizer ([Finalizer]) releases the job's BMC session and system
//     lock (job.Stepper.Release) when the object is deleted mid-job.
//   - Per-system exclusivity: the Stepper's job.SystemLocker is a [LeaseLocker]
//     (a coordination.k8s.io/v1 Lease per system) or job.NewStoreLocker over
//     the Runner's store, so CRD jobs and Runner jobs exclude each other.
//   - Credentials come from a Secret ([SecretCredentials]), read at every
//     dial, so a rotated Secret is used by the next step.
//   - [Setup] adds the Runner to the manager as a Runnable (it needs no
//     leader election) with a healthz check, and registers the Prometheus
//     adapter's metrics (contrib/prometheus) with the manager's /metrics.
package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/bmckit/bmckit/examples/controller/api/v1alpha1"
	"github.com/bmckit/bmckit/job"
)

// Finalizer keeps a BMCJob whose job has not completed until its BMC session
// and system lock are released.
const Finalizer = "bmckit.example.com/release-bmc"

// RequeueAtOnce is the RequeueAfter returned when the Stepper asks to be
// called again at once: controller-runtime treats a zero RequeueAfter as
// "do not requeue", and the deprecated Requeue flag goes through the rate
// limiter, whose delays grow with every requeue of the object.
const RequeueAtOnce = time.Millisecond

// Reconciler drives BMCJob objects with a job.Stepper.
type Reconciler struct {
	// Client reads and patches BMCJobs (the manager's client).
	Client client.Client
	// Stepper advances the jobs. Its Locks keep one job per system; its
	// Credentials resolve "namespace/name" Secret references
	// ([SecretCredentials]).
	Stepper *job.Stepper
	// Wakes, if set, carries the jobs the Stepper wants stepped again now
	// (its StepperConfig.Wake is [WakeFunc] on this channel: a BMC event
	// reported the power change a job waits for); SetupWithManager watches
	// it, so such a job is reconciled ahead of its RequeueAfter.
	Wakes chan event.GenericEvent
}

// WakeFunc is a job.StepperConfig.Wake for BMCJobs: it sends the job's
// object on ch without ever blocking (the Stepper calls it from a driver's
// goroutine). When ch is full the wake is dropped: the job's RequeueAfter
// steps it anyway, only later.
func WakeFunc(ch chan<- event.GenericEvent) func(job string) {
	return func(name string) {
		namespace, n, ok := strings.Cut(name, "/")
		if !ok {
			return // not a BMCJob's job (JobFor names them namespace/name)
		}
		select {
		case ch <- event.GenericEvent{Object: &v1alpha1.BMCJob{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: n}}}:
		default:
		}
	}
}

// JobFor builds the job of obj. Its Name is "namespace/name", which is also
// its identity in system locks; its CredentialsRef is qualified with the
// object's namespace (a BMCJob can only use Secrets of its own namespace).
// The status is obj's own (shared memory): pass the job to StepPatch, which
// separates them.
func JobFor(obj *v1alpha1.BMCJob) *job.Job {
	j := &job.Job{
		Name:       obj.Namespace + "/" + obj.Name,
		Generation: obj.Generation,
		CreatedAt:  obj.CreationTimestamp.Time,
		Spec:       obj.Spec.Spec,
		Status:     obj.Status.Status,
	}
	if ref := obj.Spec.CredentialsRef; ref != "" {
		j.Spec.CredentialsRef = obj.Namespace + "/" + ref
	}
	return j
}

// Requeue maps a StepResult onto controller-runtime's Result: nothing once
// the job is done, its delay otherwise, and [RequeueAtOnce] for "at once".
func Requeue(res job.StepResult) ctrl.Result {
	switch {
	case res.Done:
		return ctrl.Result{}
	case res.RequeueAfter <= 0:
		return ctrl.Result{RequeueAfter: RequeueAtOnce}
	}
	return ctrl.Result{RequeueAfter: res.RequeueAfter}
}

// Reconcile advances one BMCJob by one Stepper step.
//
// RBAC the controller needs (controller-gen reads these markers):
//
// +kubebuilder:rbac:groups=bmckit.example.com,resources=bmcjobs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=bmckit.example.com,resources=bmcjobs/status,verbs=get;patch
// +kubebuilder:rbac:groups=bmckit.example.com,resources=bmcjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &v1alpha1.BMCJob{}
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	j := JobFor(obj)
	if !obj.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.release(ctx, obj, j)
	}
	if j.Completed() && !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return ctrl.Result{}, nil // done, released, and its finalizer gone
	}
	if !j.Completed() && !controllerutil.ContainsFinalizer(obj, Finalizer) {
		base := obj.DeepCopy()
		controllerutil.AddFinalizer(obj, Finalizer)
		if err := r.Client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return conflictRequeue(err)
		}
		j = JobFor(obj)
	}
	res, err := r.Stepper.StepPatch(ctx, j, func(ctx context.Context, before, after job.Status) error {
		base := obj.DeepCopy()
		base.Status.Status = before
		obj.Status.Status = after
		return r.Client.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	})
	if err != nil {
		return conflictRequeue(err)
	}
	if res.Done && controllerutil.ContainsFinalizer(obj, Finalizer) {
		// Completed: the Stepper closed the session and unlocked the
		// system already; nothing to hold the object for.
		base := obj.DeepCopy()
		controllerutil.RemoveFinalizer(obj, Finalizer)
		if err := r.Client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return conflictRequeue(err)
		}
	}
	return Requeue(res), nil
}

// release closes the deleted object's BMC session and frees its system, then
// lets the deletion finish. The job is not stepped again: an action in flight
// on the BMC stays as the BMC has it.
func (r *Reconciler) release(ctx context.Context, obj *v1alpha1.BMCJob, j *job.Job) error {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return nil
	}
	if err := r.Stepper.Release(ctx, j); err != nil {
		return fmt.Errorf("releasing the BMC session of %s: %w", j.Name, err)
	}
	base := obj.DeepCopy()
	controllerutil.RemoveFinalizer(obj, Finalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, obj, client.MergeFrom(base)))
}

// conflictRequeue turns a conflict into a requeue at once: the object
// changed since the cache gave it to us (our own last patch not seen yet, a
// spec edit), and the next reconcile works on the new one. Every patch here
// carries the base's resourceVersion, so a step on a stale object never
// writes an older status over a newer one. Other errors are returned (and
// retried with the controller's backoff).
func conflictRequeue(err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: RequeueAtOnce}, nil
	}
	return ctrl.Result{}, err
}

// SetupWithManager registers the reconciler for BMCJobs.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.BMCJob{}).Named("bmcjob")
	if r.Wakes != nil {
		b = b.WatchesRawSource(source.Channel(r.Wakes, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}
