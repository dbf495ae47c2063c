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
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/syslock"
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

// DefaultMaxConcurrentReconciles is Reconciler.MaxConcurrentReconciles'
// default.
const DefaultMaxConcurrentReconciles = 16

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
	// watches it (WakeSource).
	Wakes chan event.GenericEvent
	// Name names the controller SetupWithManager registers (logs, metrics).
	// Defaults to the lower-case kind of O ("bmcjob"); New sets it from
	// Options.Name.
	Name string
	// MaxConcurrentReconciles is how many objects SetupWithManager's
	// controller steps at once (never one object twice). Defaults to
	// DefaultMaxConcurrentReconciles: a step waits for its BMC, up to a
	// request's timeout, so controller-runtime's default of 1 lets one slow
	// BMC hold every other job back.
	MaxConcurrentReconciles int

	conflicts atomic.Int64
	lagReads  atomic.Int64

	mu   sync.Mutex
	objs map[types.UID]*objState // what this process knows of the objects it steps
}

// objState is what the Reconciler remembers of one object between steps.
type objState struct {
	// rv is the resourceVersion of this process's last successful write
	// of the object; "" after a conflict (the next step reads the object
	// from the API server).
	rv string
	// conflicts counts conflicts in a row, for the backoff.
	conflicts int
	// waitedFor is the replica whose lease on the job's system this
	// process last reported waiting for (one event per replica).
	waitedFor string
	touched   time.Time
}

// Conflicts is how many times a patch of this Reconciler was refused with
// 409 Conflict (the object changed since it was read); the object was
// requeued, or the status patch sent again (see APIReader). Each is also
// logged at V(1).
func (r *Reconciler[O]) Conflicts() int64 { return r.conflicts.Load() }

// LagReads is how many steps read their object from the API server
// (APIReader) instead of stepping the cached copy, because that copy was
// older than this Reconciler's own last write of the object or its last
// step lost a conflict.
func (r *Reconciler[O]) LagReads() int64 { return r.lagReads.Load() }

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
//   - a job waiting for another job's lock: status reason [ReasonWaiting]
//     and an event naming the holder and when its lease runs out; for its
//     own lock held by another replica, the event only;
//   - a completed job: remove the finalizer (the Stepper released
//     everything already).
//
// A copy older than this process's own last write of the object, or one
// whose last step lost a conflict, is first replaced by the object read from
// the API server (APIReader). A conflict (409) requeues after a short
// jittered backoff and is counted ([Reconciler.Conflicts]); nothing was sent
// to the BMC by the step that lost it (the Stepper stores every
// state-changing request's intent before it sends it). Other API errors are
// returned (controller-runtime's backoff retries).
func (r *Reconciler[O]) Step(ctx context.Context, obj O) (ctrl.Result, error) {
	// A copy older than this process's own last write (the cache lags, as
	// it does for tens of seconds after an API-server restart) or one that
	// lost a conflict is replaced by the object as the API server has it,
	// before anything is written: a finalizer or status patch from it would
	// only lose its compare-and-swap (a replica re-adding a finalizer from a
	// lagging copy conflicted 112 times in one outage round).
	if cur, read, err := r.current(ctx, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	} else if read {
		obj = cur
	}
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
		r.wrote(obj)
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
		r.wrote(obj)
		first = false
		r.recordChange(obj, before, after)
		return nil
	})
	if err != nil {
		return r.conflictRequeue(ctx, obj, err)
	}
	if res.Waiting && !j.Completed() {
		if err := r.waiting(ctx, obj, res.Busy, waitingShown || j.Status.StartTime != nil); err != nil {
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
	if res.Done {
		r.forget(obj)
	}
	return Requeue(res), nil
}

// current returns the object as the API server has it (read true) when
// this process wrote the object since obj was read (obj's resourceVersion
// is not the one its last write returned) or its last step lost a
// conflict; otherwise obj is current as far as this process knows (read
// false). Without an APIReader obj is stepped as it is, and the Stepper's
// compare-and-swap before every state-changing request keeps that safe. A
// NotFound error means the object is gone.
func (r *Reconciler[O]) current(ctx context.Context, obj O) (cur O, read bool, err error) {
	r.mu.Lock()
	st := r.objs[obj.GetUID()]
	lags := st != nil && st.rv != obj.GetResourceVersion()
	r.mu.Unlock()
	if !lags || r.APIReader == nil {
		return obj, false, nil
	}
	r.lagReads.Add(1)
	fresh := r.NewObject()
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(obj)
			return cur, false, err
		}
		return cur, false, fmt.Errorf("reading %s from the API server (the cached copy lags): %w", client.ObjectKeyFromObject(obj), err)
	}
	if fresh.GetUID() != obj.GetUID() {
		r.forget(obj) // deleted and created again under the same name
	}
	return fresh, true, nil
}

// state returns obj's entry, creating it; the caller holds r.mu.
func (r *Reconciler[O]) state(obj O, now time.Time) *objState {
	if r.objs == nil {
		r.objs = map[types.UID]*objState{}
	}
	st := r.objs[obj.GetUID()]
	if st == nil {
		if len(r.objs) >= maxTracked {
			for uid, o := range r.objs { // objects deleted while another replica had them
				if now.Sub(o.touched) > trackedIdle {
					delete(r.objs, uid)
				}
			}
		}
		st = &objState{}
		r.objs[obj.GetUID()] = st
	}
	st.touched = now
	return st
}

// Bounds of the Reconciler's memory of objects: entries untouched for
// trackedIdle are dropped once maxTracked are kept (an object completed or
// deleted under another replica is never forgotten otherwise).
const (
	maxTracked  = 4096
	trackedIdle = 10 * time.Minute
)

// wrote records a successful write of obj (its new resourceVersion).
func (r *Reconciler[O]) wrote(obj O) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.state(obj, time.Now())
	st.rv, st.conflicts = obj.GetResourceVersion(), 0
}

func (r *Reconciler[O]) forget(obj O) {
	r.mu.Lock()
	delete(r.objs, obj.GetUID())
	r.mu.Unlock()
}

// Conflict backoff: the n-th conflict in a row of one object requeues it
// after conflictBackoffBase·2^(n-1), at most conflictBackoffMax, ±20%.
const (
	conflictBackoffBase = 100 * time.Millisecond
	conflictBackoffMax  = 5 * time.Second
)

func conflictBackoff(n int) time.Duration {
	d := conflictBackoffMax
	if n < 7 {
		d = min(conflictBackoffBase<<max(n-1, 0), conflictBackoffMax)
	}
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
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

// waiting shows a job whose system is held. Another job's hold on a job
// that has not started is stored, once, as ReasonWaiting with a message
// naming the holder and when its lease runs out, with an event. The job's
// own lock held by another replica (two replicas without leader election,
// or a leader that died holding it) is an event only, once per replica:
// writing the status would conflict with the live replica's own writes.
func (r *Reconciler[O]) waiting(ctx context.Context, obj O, busy *syslock.BusyError, shown bool) error {
	msg := waitingMessage(obj.JobSpec().BMC, busy)
	if busy != nil && busy.SameJob {
		r.mu.Lock()
		st := r.state(obj, time.Now())
		again := st.waitedFor == busy.Owner
		st.waitedFor = busy.Owner
		r.mu.Unlock()
		if !again {
			r.event(obj, corev1.EventTypeNormal, ReasonWaiting, "Wait", msg)
		}
		return nil
	}
	if shown {
		return nil
	}
	base := obj.DeepCopyObject().(O)
	st := obj.JobStatus()
	st.Reason = ReasonWaiting
	st.Message = msg
	if err := r.Client.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	r.wrote(obj)
	r.event(obj, corev1.EventTypeNormal, ReasonWaiting, "Wait", st.Message)
	return nil
}

// waitingMessage says what a job waits for: the BMC (its URL redacted),
// the holder and its replica, and when the lease runs out as this replica
// sees it.
func waitingMessage(bmcURL string, busy *syslock.BusyError) string {
	where := "waiting for BMC " + bmc.RedactURL(bmcURL)
	if busy == nil || busy.Holder == "" {
		return where + ": another job holds its system"
	}
	var b strings.Builder
	b.WriteString(where)
	if busy.SameJob {
		fmt.Fprintf(&b, ": another replica, %q, holds this job's system", busy.Owner)
	} else {
		fmt.Fprintf(&b, ": job %q holds its system", busy.Holder)
		if busy.Owner != "" {
			fmt.Fprintf(&b, " (replica %q)", busy.Owner)
		}
	}
	if !busy.Until.IsZero() {
		fmt.Fprintf(&b, "; its lease runs out at %s unless renewed", busy.Until.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// recordChange records Started and Completed events for a stored change.
func (r *Reconciler[O]) recordChange(obj O, before, after job.Status) {
	if r.Events == nil {
		return
	}
	if !taskStarted(&before) && taskStarted(&after) {
		r.event(obj, corev1.EventTypeNormal, EventStarted, "Step", "started on BMC "+bmc.RedactURL(obj.JobSpec().BMC))
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

// taskStarted says whether a task of the job started: a job refused at its
// start (InvalidSpec, NotSupported) or canceled before it started has no
// Started event.
func taskStarted(st *job.Status) bool {
	for i := range st.Tasks {
		if st.Tasks[i].StartTime != nil {
			return true
		}
	}
	return false
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
	r.forget(obj)
	if !j.Completed() {
		r.event(obj, corev1.EventTypeNormal, EventReleased, "Release", "deleted before completion: BMC session closed and system unlocked")
	}
	base := obj.DeepCopyObject().(O)
	controllerutil.RemoveFinalizer(obj, fin)
	return client.IgnoreNotFound(r.Client.Patch(ctx, obj, client.MergeFrom(base)))
}

// conflictRequeue turns a conflict into a requeue after a short, jittered
// backoff that grows with the object's conflicts in a row (100 ms doubling
// to 5 s, ±20%): the object changed since the cache gave it to us (our own
// last patch not seen yet, a spec edit, another writer), and the next step
// reads it from the API server (see current) and works on the new one.
// Every patch carries the base's resourceVersion, and the Stepper stores
// each state-changing request's intent before it sends it, so a step on a
// stale object never writes an older status over a newer one nor acts.
// Conflicts are counted and logged at V(1); other errors are returned.
func (r *Reconciler[O]) conflictRequeue(ctx context.Context, obj O, err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		r.mu.Lock()
		st := r.state(obj, time.Now())
		st.rv = "" // read it from the API server next time
		st.conflicts++
		n := st.conflicts
		r.mu.Unlock()
		r.countConflict(ctx, obj, "requeued after a backoff")
		return ctrl.Result{RequeueAfter: conflictBackoff(n)}, nil
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

// +kubebuilder:rbac:groups=bmckit.io,resources=bmcjobs,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=bmckit.io,resources=bmcjobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=bmckit.io,resources=bmcjobs/finalizers,verbs=update

// SetupWithManager registers r as the controller of O's objects with mgr,
// named r.Name: it watches O's objects without the updates that only change
// their status ([IgnoreStatusOnlyUpdates]) and the Stepper's wakes
// ([Reconciler.WakeSource]). A host with its own Reconcile around
// [Reconciler.Step] registers its own controller the same way, instead of
// this one (one controller per type: controller-runtime refuses a second
// controller named after the kind):
//
//	func (r *MyJobReconciler) SetupWithManager(mgr ctrl.Manager) error {
//		return ctrl.NewControllerManagedBy(mgr).
//			For(&v1.MyJob{}, builder.WithPredicates(controller.IgnoreStatusOnlyUpdates())).
//			WatchesRawSource(r.Jobs.WakeSource()). // r.Jobs from controller.New
//			Complete(r)
//	}
//
// The markers above are the permissions of the controller of the kit's
// BMCJob (api/v1alpha1); a host's own type needs the same on its group and
// resource. config/rbac/role.yaml is generated from them and New's.
func (r *Reconciler[O]) SetupWithManager(mgr ctrl.Manager) error {
	name := r.Name
	if name == "" {
		var err error
		if name, err = kindName(mgr, r.NewObject()); err != nil {
			return err
		}
	}
	workers := r.MaxConcurrentReconciles
	if workers <= 0 {
		workers = DefaultMaxConcurrentReconciles
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(r.NewObject(), builder.WithPredicates(IgnoreStatusOnlyUpdates())).
		Named(name).
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: workers, RateLimiter: ErrorBackoff()}).
		WatchesRawSource(r.WakeSource()).
		Complete(r)
}
