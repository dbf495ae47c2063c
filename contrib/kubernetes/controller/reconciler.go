// Package controller runs bmckit jobs kept in a host's own custom resource
// with controller-runtime: a [Reconciler] generic over the host's type (any
// [Object]: a client.Object whose spec embeds job.Spec and whose status
// embeds job.Status) that steps the job with job.Stepper.StepPatch, stores
// every change with an optimistic-lock merge patch of the status, maps the
// Stepper's results onto requeues, holds the object with a finalizer until
// the job's BMC session and system lock are released, records events, and
// shows a job whose system is busy with the status reason [ReasonWaiting].
// [Setup] wires it into a manager with a Lease locker (package leaselock),
// Secret credentials (package secretcreds), metrics and the Runnables.
//
// A host's Reconcile can be as short as:
//
//	func (r *MyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
//		obj := &v1.MyJob{}
//		if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
//			return ctrl.Result{}, client.IgnoreNotFound(err)
//		}
//		return r.Jobs.Step(ctx, obj) // r.Jobs is a *controller.Reconciler[*v1.MyJob]
//	}
//
// docs/kubernetes.md has the decisions.
package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/bmckit/bmckit/job"
)

// Object is a custom resource that holds a bmckit job: its spec embeds
// job.Spec and its status embeds job.Status (inline, see docs/kubernetes.md).
// The two methods give the kit access to them:
//
//	func (o *MyJob) JobSpec() *job.Spec     { return &o.Spec.Spec }
//	func (o *MyJob) JobStatus() *job.Status { return &o.Status.Status }
type Object interface {
	client.Object
	JobSpec() *job.Spec
	JobStatus() *job.Status
}

// FinalizerName is the finalizer's name after the object's API group:
// "<group>/release-bmc", unless Reconciler.Finalizer says otherwise.
const FinalizerName = "release-bmc"

// ReasonWaiting is the status reason (and event reason) of a job that has
// not started because another job holds its system. It is cleared by the
// job's first change once it got the system.
const ReasonWaiting = "Waiting"

// Event reasons the Reconciler records on the object.
const (
	EventStarted   = "Started"
	EventCompleted = "Completed" // the note says the result; Warning unless Succeeded
	EventReleased  = "Released"  // deleted before completion: session closed, system unlocked
)

// RequeueAtOnce is the RequeueAfter returned when the Stepper asks to be
// called again at once: controller-runtime treats a zero RequeueAfter as
// "do not requeue", and the deprecated Requeue flag goes through the rate
// limiter, whose delays grow with every requeue of the object.
const RequeueAtOnce = time.Millisecond

// Reconciler drives objects of the host's type O with a job.Stepper. Its
// Reconcile is complete; a host with its own Reconcile calls [Reconciler.Step]
// with the object it read.
type Reconciler[O Object] struct {
	// Client reads and patches the objects (the manager's client). Its
	// scheme must know O.
	Client client.Client
	// Stepper advances the jobs. Its Locks keep one job per system (and one
	// replica per job); its Credentials resolve the "namespace/name"
	// references JobFor makes.
	Stepper *job.Stepper
	// NewObject returns an empty O (e.g. func() *v1.MyJob { return
	// &v1.MyJob{} }). Required by Reconcile, SetupWithManager and WakeFunc.
	NewObject func() O
	// Finalizer overrides the finalizer's name, "<O's API group>/release-bmc".
	Finalizer string
	// Events, if set, records Started, Waiting, Completed and Released
	// events on the object (the manager's GetEventRecorder).
	Events events.EventRecorder
	// APIReader, if set, reads the object from the API server (not the
	// cache) after a status patch conflicted: when the stored status is
	// still the one the patch started from and the generation is the same
	// (only metadata changed: a label, an annotation, another controller's
	// finalizer), the patch is sent again on the fresh resourceVersion
	// instead of requeueing. Without it every conflict requeues, and a
	// writer that changes the object more often than a step takes starves
	// the job. Setup sets the manager's APIReader.
	APIReader client.Reader
	// Wakes, if set, carries the jobs the Stepper wants stepped again now
	// (its StepperConfig.Wake is WakeFunc on this channel); SetupWithManager
	// watches it.
	Wakes chan event.GenericEvent

	conflicts atomic.Int64
}

// Conflicts is how many times a patch of this Reconciler was refused with
// 409 Conflict (the object changed since it was read); the object was
// requeued, or the status patch sent again (see APIReader). Each is also
// logged at V(1).
func (r *Reconciler[O]) Conflicts() int64 { return r.conflicts.Load() }

// JobFor builds the job of obj. Its Name is "namespace/name", which is also
// its identity in system locks; its CredentialsRef is qualified with the
// object's namespace (an object can only use Secrets of its own namespace).
// The status is obj's own (shared memory): pass the job to StepPatch, which
// separates them.
func JobFor(obj Object) *job.Job {
	j := &job.Job{
		Name:       obj.GetNamespace() + "/" + obj.GetName(),
		Generation: obj.GetGeneration(),
		CreatedAt:  obj.GetCreationTimestamp().Time,
		Spec:       *obj.JobSpec(),
		Status:     *obj.JobStatus(),
	}
	if ref := j.Spec.CredentialsRef; ref != "" {
		j.Spec.CredentialsRef = obj.GetNamespace() + "/" + ref
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

// Reconcile reads the object and steps it ([Reconciler.Step]).
func (r *Reconciler[O]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := r.NewObject()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return r.Step(ctx, obj)
}

// Step advances obj's job by one Stepper step:
//
//   - a deleted object: release the job's BMC session and system
//     (job.Stepper.Release), then remove the finalizer;
//   - an unfinished job without the finalizer: add it first;
//   - step with StepPatch, each change stored with a merge patch of the
//     status from before to after, carrying obj's resourceVersion
//     (optimistic lock);
//   - a job waiting for its system: status reason [ReasonWaiting];
//   - a completed job: remove the finalizer (the Stepper released
//     everything already).
//
// A conflict (409) requeues at once and is counted ([Reconciler.Conflicts]).
// Other API errors are returned (controller-runtime's backoff retries).
func (r *Reconciler[O]) Step(ctx context.Context, obj O) (ctrl.Result, error) {
	j := JobFor(obj)
	fin, err := r.finalizer(obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, r.release(ctx, obj, j, fin)
	}
	has := controllerutil.ContainsFinalizer(obj, fin)
	if j.Completed() && !has {
		return ctrl.Result{}, nil // done, released, and its finalizer gone
	}
	if !j.Completed() && !has {
		base := obj.DeepCopyObject().(O)
		controllerutil.AddFinalizer(obj, fin)
		if err := r.Client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return r.conflictRequeue(ctx, obj, err)
		}
		j = JobFor(obj)
	}
	// The object's status as stored: the base of the first patch, so that a
	// Waiting reason this Reconciler wrote is cleared by the job's first
	// change (the job itself never saw it).
	stored := obj.JobStatus().DeepCopy()
	waitingShown := stored.Reason == ReasonWaiting && !j.Completed()
	if waitingShown {
		j.Status.Reason, j.Status.Message = "", ""
	}
	first := true
	res, err := r.Stepper.StepPatch(ctx, j, func(ctx context.Context, before, after job.Status) error {
		base := obj.DeepCopyObject().(O)
		if first {
			*base.JobStatus() = *stored
		} else {
			*base.JobStatus() = before
		}
		*obj.JobStatus() = after
		if err := r.patchStatus(ctx, base, obj); err != nil {
			return err
		}
		first = false
		r.recordChange(obj, before, after)
		return nil
	})
	if err != nil {
		return r.conflictRequeue(ctx, obj, err)
	}
	if res.Waiting && !waitingShown && !j.Completed() && j.Status.StartTime == nil {
		if err := r.showWaiting(ctx, obj); err != nil {
			return r.conflictRequeue(ctx, obj, err)
		}
	}
	if res.Done && controllerutil.ContainsFinalizer(obj, fin) {
		base := obj.DeepCopyObject().(O)
		controllerutil.RemoveFinalizer(obj, fin)
		if err := r.Client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return r.conflictRequeue(ctx, obj, err)
		}
	}
	return Requeue(res), nil
}

// maxRebases bounds how often one status patch is sent again on a fresh
// resourceVersion after conflicts.
const maxRebases = 5

// patchStatus patches obj's status from base's with the optimistic lock.
// On a conflict it counts and logs it and, with an APIReader, reads the
// object from the API server: if its generation and status are still
// base's, only metadata changed, and the patch is sent again on the fresh
// resourceVersion (a compare-and-swap on the status itself). Otherwise the
// conflict is returned (the object is requeued).
func (r *Reconciler[O]) patchStatus(ctx context.Context, base, obj O) error {
	for attempt := 0; ; attempt++ {
		err := r.Client.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		if !apierrors.IsConflict(err) || r.APIReader == nil || attempt == maxRebases {
			return err
		}
		fresh := r.NewObject()
		if gerr := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), fresh); gerr != nil {
			return err
		}
		if fresh.GetGeneration() != base.GetGeneration() || !sameStatus(fresh.JobStatus(), base.JobStatus()) {
			return err // the spec or the status changed: step on the new object
		}
		r.countConflict(ctx, obj, "only metadata changed: status patch sent again on the fresh object")
		base.SetResourceVersion(fresh.GetResourceVersion())
		obj.SetResourceVersion(fresh.GetResourceVersion())
	}
}

// sameStatus compares two statuses as the API server stores them (JSON):
// decoded times differ from in-memory ones in their monotonic reading.
func sameStatus(a, b *job.Status) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

func (r *Reconciler[O]) countConflict(ctx context.Context, obj O, what string) {
	n := r.conflicts.Add(1)
	logr.FromContextOrDiscard(ctx).V(1).Info("conflict: the object changed since it was read; "+what,
		"object", client.ObjectKeyFromObject(obj).String(), "resourceVersion", obj.GetResourceVersion(), "conflicts", n)
}

// showWaiting stores ReasonWaiting on a job that has not started because
// its system is held, once.
func (r *Reconciler[O]) showWaiting(ctx context.Context, obj O) error {
	base := obj.DeepCopyObject().(O)
	st := obj.JobStatus()
	st.Reason = ReasonWaiting
	st.Message = fmt.Sprintf("waiting for BMC %s: another job holds its system", obj.JobSpec().BMC)
	if err := r.Client.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	r.event(obj, corev1.EventTypeNormal, ReasonWaiting, "Wait", st.Message)
	return nil
}

// recordChange records Started and Completed events for a stored change.
func (r *Reconciler[O]) recordChange(obj O, before, after job.Status) {
	if r.Events == nil {
		return
	}
	if before.StartTime == nil && after.StartTime != nil {
		r.event(obj, corev1.EventTypeNormal, EventStarted, "Step", fmt.Sprintf("started on BMC %s", obj.JobSpec().BMC))
	}
	if !(&job.Job{Status: before}).Completed() && (&job.Job{Status: after}).Completed() {
		typ := corev1.EventTypeNormal
		if after.Result != "Succeeded" {
			typ = corev1.EventTypeWarning
		}
		note := string(after.Result)
		if after.Message != "" {
			note += ": " + after.Message
		}
		r.event(obj, typ, EventCompleted, "Step", note)
	}
}

func (r *Reconciler[O]) event(obj O, typ, reason, action, note string) {
	if r.Events != nil {
		r.Events.Eventf(obj, nil, typ, reason, action, "%s", note)
	}
}

func (r *Reconciler[O]) finalizer(obj O) (string, error) {
	if r.Finalizer != "" {
		return r.Finalizer, nil
	}
	gvk, err := r.Client.GroupVersionKindFor(obj)
	if err != nil {
		return "", fmt.Errorf("controller: the client's scheme does not know %T: %w", obj, err)
	}
	if gvk.Group == "" {
		return "", fmt.Errorf("controller: %s has no API group: set Reconciler.Finalizer", gvk.Kind)
	}
	return gvk.Group + "/" + FinalizerName, nil
}

// release closes the deleted object's BMC session and frees its system, then
// lets the deletion finish. The job is not stepped again: an action in flight
// on the BMC stays as the BMC has it.
func (r *Reconciler[O]) release(ctx context.Context, obj O, j *job.Job, fin string) error {
	if !controllerutil.ContainsFinalizer(obj, fin) {
		return nil
	}
	if err := r.Stepper.Release(ctx, j.Name, j.Spec.BMC); err != nil {
		return fmt.Errorf("releasing the BMC session of %s: %w", j.Name, err)
	}
	if !j.Completed() {
		r.event(obj, corev1.EventTypeNormal, EventReleased, "Release", "deleted before completion: BMC session closed and system unlocked")
	}
	base := obj.DeepCopyObject().(O)
	controllerutil.RemoveFinalizer(obj, fin)
	return client.IgnoreNotFound(r.Client.Patch(ctx, obj, client.MergeFrom(base)))
}

// conflictRequeue turns a conflict into a requeue at once: the object
// changed since the cache gave it to us (our own last patch not seen yet, a
// spec edit, another writer), and the next reconcile works on the new one.
// Every patch carries the base's resourceVersion, so a step on a stale object
// never writes an older status over a newer one. Conflicts are counted and
// logged at V(1); other errors are returned.
func (r *Reconciler[O]) conflictRequeue(ctx context.Context, obj O, err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		r.countConflict(ctx, obj, "requeued")
		return ctrl.Result{RequeueAfter: RequeueAtOnce}, nil
	}
	return ctrl.Result{}, err
}

// WakeFunc is a job.StepperConfig.Wake for objects of type O: it sends the
// job's object (JobFor names jobs "namespace/name") on ch without ever
// blocking (the Stepper calls it from a driver's goroutine). When ch is full
// the wake is dropped: the job's RequeueAfter steps it anyway, only later.
func WakeFunc[O Object](newObject func() O, ch chan<- event.GenericEvent) func(job string) {
	return func(name string) {
		namespace, n, ok := strings.Cut(name, "/")
		if !ok {
			return // not a job of an object
		}
		obj := newObject()
		obj.SetNamespace(namespace)
		obj.SetName(n)
		select {
		case ch <- event.GenericEvent{Object: obj}:
		default:
		}
	}
}

// SetupWithManager registers the reconciler for O with mgr, named name.
func (r *Reconciler[O]) SetupWithManager(mgr ctrl.Manager, name string) error {
	b := ctrl.NewControllerManagedBy(mgr).For(r.NewObject()).Named(name)
	if r.Wakes != nil {
		b = b.WatchesRawSource(source.Channel(r.Wakes, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}
