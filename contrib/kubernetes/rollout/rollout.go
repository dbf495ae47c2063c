// Package rollout carries out BMCRollout objects (api/v1alpha1): one job
// template run on every Machine a label selector matched, never more than
// policy.maxUnavailable servers at once (and per-group limits), a canary
// first, halted by a failure budget, held back per Machine by the
// annotation bmckit.io/hold: "true", skipping servers already in the
// wanted state, with pause, resume and abort (docs/rollouts.md; in
// Kubernetes, docs/kubernetes.md "Rollouts").
//
// The decisions are the core's (rollout.Decide); the BMCRollout's status is
// the rollout's record. A reconcile reads the object, snapshots its
// Machines on the first one (status.servers, sorted by name: Machines added
// later are not included), reads the completions from the BMCJobs it owns,
// decides, and writes the status with the object's resourceVersion. Only
// after that write succeeded does it create the started servers' BMCJobs
// (named <rollout>.<index>.<machine>, owned by the BMCRollout, labelled
// bmckit.io/rollout=<rollout>); a 409 requeues and creates nothing. A
// server recorded as running whose BMCJob does not exist (a crash between
// the write and the create) gets it created by the next reconcile; an
// existing one (AlreadyExists) was created by an earlier reconcile.
//
// The kit's BMCJob controller (controller.Setup) runs the BMCJobs. [Setup]
// adds the rollout controller beside it:
//
//	ctl, err := controller.Setup(mgr, controller.Options[*v1alpha1.BMCJob]{...})
//	_, err = rollout.Setup(mgr, rollout.Options{Stepper: ctl.Stepper})
package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
	"github.com/bmckit/bmckit/contrib/kubernetes/controller"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/rollout"
	"github.com/bmckit/bmckit/timestamp"
)

// Event reasons recorded on a BMCRollout: the rollout's own transitions,
// never one per server.
const (
	EventStarted         = "Started"
	EventCanarySucceeded = "CanarySucceeded"
	EventCanaryFailed    = "CanaryFailed" // Warning
	EventHalting         = "Halting"      // Warning
	EventCompleted       = "Completed"    // Warning unless Succeeded
	EventInvalidSpec     = "InvalidSpec"  // Warning
)

// Reasons of the status besides the core's (rollout.ReasonRolling and the
// others) and conditions.ReasonInvalidSpec.
const (
	// ReasonNoMachines: the selector matches no Machine yet; the rollout
	// has not started (no snapshot) and looks again on every reconcile.
	ReasonNoMachines = "NoMachines"
	// ReasonJobNameTaken: a BMCJob with the server's job name exists and is
	// not this rollout's (a BMCRollout of the same name deleted and created
	// again before its BMCJobs were collected): the server fails.
	ReasonJobNameTaken = "JobNameTaken"
)

// DefaultPollInterval is how often an unfinished rollout is reconciled
// besides its events (its BMCJobs' completions, its spec, its Machines'
// hold annotation).
const DefaultPollInterval = 10 * time.Second

// Options configures [Setup].
type Options struct {
	// Stepper is the BMCJob controller's Stepper (controller.Controller's):
	// its InState is the skip check. Nil: no skip check (every server
	// runs its job).
	Stepper *job.Stepper
	// InState overrides the skip check (tests; a host's own check). The
	// job spec's CredentialsRef is "namespace/name", as the BMCJob
	// controller resolves it.
	InState func(ctx context.Context, s job.Spec) (in bool, why string, err error)
	// PollInterval defaults to DefaultPollInterval.
	PollInterval time.Duration
	// MaxConcurrentReconciles defaults to 4 (rollouts are independent; a
	// pass's skip checks read BMCs).
	MaxConcurrentReconciles int
	// CheckConcurrency bounds the skip checks of one pass (default 64).
	CheckConcurrency int
}

// +kubebuilder:rbac:groups=bmckit.io,resources=bmcrollouts,verbs=get;list;watch
// +kubebuilder:rbac:groups=bmckit.io,resources=bmcrollouts/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=bmckit.io,resources=bmcrollouts/finalizers,verbs=update
// +kubebuilder:rbac:groups=bmckit.io,resources=bmcjobs,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=bmckit.io,resources=machines,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Setup adds the BMCRollout controller to mgr and returns its Reconciler.
// It is opt-in: controller.Setup does not call it (a host without the
// BMCRollout CRD is unaffected). It watches BMCRollouts (not their status
// writes), the BMCJobs they own (creation, deletion, completion) and
// Machines (creation, deletion, the hold annotation).
//
// The markers above are its permissions (config/rbac/role.yaml is generated
// from them with the rest of the kit's): bmcrollouts/finalizers update is
// what the owner references of its BMCJobs need (blockOwnerDeletion).
func Setup(mgr ctrl.Manager, opts Options) (*Reconciler, error) {
	r := &Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Events: mgr.GetEventRecorder("bmckit-rollout"), InState: opts.InState,
		PollInterval: opts.PollInterval, CheckConcurrency: opts.CheckConcurrency,
	}
	if r.InState == nil {
		r.InState = stepperInState(opts.Stepper)
	}
	workers := opts.MaxConcurrentReconciles
	if workers <= 0 {
		workers = 4
	}
	err := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.BMCRollout{}, builder.WithPredicates(controller.IgnoreStatusOnlyUpdates())).
		Owns(&v1alpha1.BMCJob{}, builder.WithPredicates(jobCompletion())).
		Watches(&v1alpha1.Machine{}, handler.EnqueueRequestsFromMapFunc(r.rolloutsOf), builder.WithPredicates(machineChange())).
		Named("bmcrollout").
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: workers, RateLimiter: controller.ErrorBackoff()}).
		Complete(r)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// stepperInState is the Stepper's InState (read-only: every task's effect
// already present); nil without a Stepper (no skip check).
func stepperInState(s *job.Stepper) func(context.Context, job.Spec) (bool, string, error) {
	if s == nil {
		return nil
	}
	return s.InState
}

// jobCompletion keeps the BMCJob events a rollout acts on: creation,
// deletion, and an update that changes Completed.
func jobCompletion() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		a, okA := e.ObjectOld.(*v1alpha1.BMCJob)
		b, okB := e.ObjectNew.(*v1alpha1.BMCJob)
		if !okA || !okB {
			return true
		}
		return conditions.IsTrue(a.Status.Conditions, conditions.TypeCompleted) != conditions.IsTrue(b.Status.Conditions, conditions.TypeCompleted)
	}}
}

// machineChange keeps the Machine events a rollout acts on: creation (a
// rollout waiting for its first Machine), deletion, and a change of the
// hold annotation.
func machineChange() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetAnnotations()[v1alpha1.HoldAnnotation] != e.ObjectNew.GetAnnotations()[v1alpha1.HoldAnnotation]
	}}
}

// rolloutsOf maps a Machine to the unfinished BMCRollouts of its namespace.
func (r *Reconciler) rolloutsOf(ctx context.Context, m client.Object) []reconcile.Request {
	var list v1alpha1.BMCRolloutList
	if err := r.Client.List(ctx, &list, client.InNamespace(m.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		ro := &list.Items[i]
		if !conditions.IsTrue(ro.Status.Conditions, conditions.TypeCompleted) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(ro)})
		}
	}
	return out
}

// Reconciler carries out BMCRollouts.
type Reconciler struct {
	// Client reads BMCRollouts, BMCJobs and Machines (the manager's cached
	// client), writes the status and creates BMCJobs.
	Client client.Client
	// APIReader reads a BMCRollout past a cache that lags this process's
	// own last write of it.
	APIReader client.Reader
	// Events records the rollout's transitions.
	Events events.EventRecorder
	// InState is the skip check (nil: none).
	InState          func(ctx context.Context, s job.Spec) (bool, string, error)
	PollInterval     time.Duration
	CheckConcurrency int
	// Now defaults to time.Now.
	Now func() time.Time

	conflicts atomic.Int64
	writes    atomic.Int64

	mu   sync.Mutex
	objs map[types.UID]*objState
}

// objState is what this process remembers of one rollout.
type objState struct {
	rv        string                  // resourceVersion of this process's last write; "" after a conflict
	conflicts int                     // in a row, for the backoff
	created   map[string]bool         // BMCJobs this process created (the cache may not show them yet)
	refused   map[int]rollout.Outcome // servers whose BMCJob the API server refused (422): failed
}

// Conflicts is how many status writes were refused with 409 (the object
// changed since it was read): each requeued, nothing created.
func (r *Reconciler) Conflicts() int64 { return r.conflicts.Load() }

// Writes is how many status writes succeeded.
func (r *Reconciler) Writes() int64 { return r.writes.Load() }

func (r *Reconciler) state(uid types.UID) *objState {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.objs == nil {
		r.objs = map[types.UID]*objState{}
	}
	s := r.objs[uid]
	if s == nil {
		s = &objState{created: map[string]bool{}, refused: map[int]rollout.Outcome{}}
		r.objs[uid] = s
	}
	return s
}

func (r *Reconciler) forget(uid types.UID) {
	r.mu.Lock()
	delete(r.objs, uid)
	r.mu.Unlock()
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now().UTC()
	}
	return time.Now().UTC()
}

func (r *Reconciler) poll() time.Duration {
	if r.PollInterval > 0 {
		return r.PollInterval
	}
	return DefaultPollInterval
}

// maxPasses bounds the passes of one reconcile: a pass that skipped
// servers (already in state) left room that the next pass fills at once.
const maxPasses = 16

// Reconcile makes passes over one BMCRollout (see the package doc).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ro := &v1alpha1.BMCRollout{}
	if err := r.Client.Get(ctx, req.NamespacedName, ro); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ro.DeletionTimestamp.IsZero() {
		r.forget(ro.UID)
		return ctrl.Result{}, nil
	}
	st := r.state(ro.UID)
	// A copy older than this process's own last write would only lose its
	// write: read the object from the API server instead.
	r.mu.Lock()
	stale := st.rv != ro.ResourceVersion
	r.mu.Unlock()
	if stale && r.APIReader != nil {
		if err := r.APIReader.Get(ctx, req.NamespacedName, ro); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	for pass := 0; pass < maxPasses; pass++ {
		if conditions.IsTrue(ro.Status.Conditions, conditions.TypeCompleted) {
			r.forget(ro.UID)
			return ctrl.Result{}, nil
		}
		again, res, err := r.pass(ctx, ro, st)
		if err != nil || !again {
			return res, err
		}
	}
	return ctrl.Result{RequeueAfter: controller.RequeueAtOnce}, nil
}

// pass is one decision over ro: snapshot (first time), outcomes, Decide,
// the status write, then the BMCJobs. again: the pass skipped servers,
// and ro (updated by the write) may start more at once.
func (r *Reconciler) pass(ctx context.Context, ro *v1alpha1.BMCRollout, st *objState) (again bool, res ctrl.Result, err error) {
	log := ctrl.LoggerFrom(ctx)
	before := ro.DeepCopy()
	now := r.now()
	if len(ro.Status.Servers) == 0 {
		var ms v1alpha1.MachineList
		sel, err := metav1.LabelSelectorAsSelector(&ro.Spec.Selector)
		if err != nil {
			return false, ctrl.Result{}, r.invalid(ctx, ro, before, fmt.Errorf("selector: %w", err), now)
		}
		if err := r.Client.List(ctx, &ms, client.InNamespace(ro.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return false, ctrl.Result{}, err
		}
		if len(ms.Items) == 0 {
			msg := fmt.Sprintf("the selector %s matches no Machine in namespace %s; the rollout starts once one does", sel, ro.Namespace)
			conditions.Set(&ro.Status.Conditions, conditions.Condition{Type: conditions.TypeCompleted, Status: conditions.False, Reason: ReasonNoMachines, Message: msg, ObservedGeneration: ro.Generation, LastTransitionTime: timestamp.New(now)})
			conditions.Set(&ro.Status.Conditions, conditions.Condition{Type: conditions.TypeRunning, Status: conditions.False, Reason: ReasonNoMachines, Message: msg, ObservedGeneration: ro.Generation, LastTransitionTime: timestamp.New(now)})
			ro.Status.ObservedGeneration = ro.Generation
			if _, err := r.write(ctx, ro, before, st); err != nil {
				res, err := r.conflictRequeue(err, st)
				return false, res, err
			}
			return false, ctrl.Result{RequeueAfter: r.poll()}, nil
		}
		if len(ms.Items) > v1alpha1.MaxRolloutServers {
			return false, ctrl.Result{}, r.invalid(ctx, ro, before, fmt.Errorf("selector: matches %d Machines, at most %d in one BMCRollout: split the fleet by label", len(ms.Items), v1alpha1.MaxRolloutServers), now)
		}
		servers, bad := snapshot(ms.Items, &ro.Spec.Policy)
		ro.Status.Servers = servers
		if bad != nil {
			return false, ctrl.Result{}, r.invalid(ctx, ro, before, bad, now)
		}
	}
	spec, err := specOf(ro)
	if err == nil {
		err = spec.Validate()
	}
	if err != nil {
		return false, ctrl.Result{}, r.invalid(ctx, ro, before, err, now)
	}

	var jobs v1alpha1.BMCJobList
	if err := r.Client.List(ctx, &jobs, client.InNamespace(ro.Namespace), client.MatchingLabels{v1alpha1.RolloutLabel: ro.Name}); err != nil {
		return false, ctrl.Result{}, err
	}
	byName := make(map[string]*v1alpha1.BMCJob, len(jobs.Items))
	for i := range jobs.Items {
		byName[jobs.Items[i].Name] = &jobs.Items[i]
	}
	cur := toCore(&ro.Status)
	var outs []rollout.Outcome
	var missing []int
	r.mu.Lock()
	for i := range st.refused {
		if cur.State(i) != rollout.StateRunning {
			delete(st.refused, i) // recorded
		}
	}
	for i := 0; i < len(cur.States); i++ {
		if cur.State(i) != rollout.StateRunning {
			continue
		}
		jn := rollout.JobName(ro.Name, i, spec.Servers[i].Name)
		bj := byName[jn]
		switch {
		case bj != nil && !metav1.IsControlledBy(bj, ro):
			outs = append(outs, rollout.Outcome{Index: i, Job: jn, Result: conditions.ResultFailed, Reason: ReasonJobNameTaken,
				Message: fmt.Sprintf("BMCJob %s exists and is not this rollout's (a BMCRollout of the same name was deleted and created again before its BMCJobs were collected?)", jn), Completed: now})
		case bj != nil && conditions.IsTrue(bj.Status.Conditions, conditions.TypeCompleted):
			o := rollout.Outcome{Index: i, Job: jn, Result: bj.Status.Result, Reason: bj.Status.Reason, Message: bj.Status.Message, Completed: now}
			if bj.Status.CompletionTime != nil {
				o.Completed = bj.Status.CompletionTime.Time
			}
			outs = append(outs, o)
		case bj != nil:
		default:
			if o, ok := st.refused[i]; ok {
				outs = append(outs, o)
			} else if !st.created[jn] {
				missing = append(missing, i)
			}
		}
	}
	r.mu.Unlock()

	started, evs := rollout.Decide(ctx, rollout.Decision{
		Name: ro.Name, Spec: spec, Now: now, Outcomes: outs,
		Control:          rollout.Control{Paused: ro.Spec.Paused, Aborted: ro.Spec.Abort, CanaryApproved: ro.Spec.CanaryApproved},
		Approve:          r.approver(ctx, ro, spec),
		InState:          r.skipCheck(ro, spec),
		CheckConcurrency: r.CheckConcurrency,
	}, &cur)
	fromCore(&cur, &ro.Status, ro.Generation)
	ro.Status.ObservedGeneration = ro.Generation
	wrote, err := r.write(ctx, ro, before, st)
	if err != nil {
		res, err := r.conflictRequeue(err, st)
		return false, res, err
	}
	if wrote {
		r.record(ro, evs)
	}
	// Only now that the write holds them: the BMCJobs of the started
	// servers, and of running servers whose BMCJob is missing.
	requeue, refused := false, false
	for _, i := range append(missing, started...) {
		ok, err := r.createJob(ctx, ro, spec, i, st, now)
		if err != nil {
			log.Error(err, "creating a server's BMCJob; retried", "rollout", client.ObjectKeyFromObject(ro).String(), "server", spec.Servers[i].Name)
			requeue = true
		}
		refused = refused || !ok
	}
	if conditions.IsTrue(ro.Status.Conditions, conditions.TypeCompleted) {
		return false, ctrl.Result{}, nil
	}
	skipped := false
	for _, e := range evs {
		skipped = skipped || e.To == rollout.StateSkipped
	}
	switch {
	case requeue:
		return false, ctrl.Result{}, errors.New("some BMCJobs could not be created")
	case refused:
		return false, ctrl.Result{RequeueAfter: controller.RequeueAtOnce}, nil
	case skipped && wrote:
		return true, ctrl.Result{}, nil
	}
	return false, ctrl.Result{RequeueAfter: r.poll()}, nil
}

// write stores ro's status if it differs from before's, by a merge patch
// with before's resourceVersion (409 if the object changed since).
func (r *Reconciler) write(ctx context.Context, ro, before *v1alpha1.BMCRollout, st *objState) (bool, error) {
	a, err := json.Marshal(ro.Status)
	if err != nil {
		return false, err
	}
	b, err := json.Marshal(before.Status)
	if err != nil {
		return false, err
	}
	if bytes.Equal(a, b) {
		return false, nil
	}
	if err := r.Client.Status().Patch(ctx, ro, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, err
	}
	r.writes.Add(1)
	r.mu.Lock()
	st.rv, st.conflicts = ro.ResourceVersion, 0
	r.mu.Unlock()
	return true, nil
}

// conflictRequeue maps a failed write: a 409 requeues after a jittered
// backoff (100 ms doubling to 5 s) and the next reconcile reads the object
// from the API server; other errors are returned.
func (r *Reconciler) conflictRequeue(err error, st *objState) (ctrl.Result, error) {
	if !apierrors.IsConflict(err) {
		return ctrl.Result{}, err
	}
	r.conflicts.Add(1)
	r.mu.Lock()
	st.rv = ""
	st.conflicts++
	n := st.conflicts
	r.mu.Unlock()
	d := 100 * time.Millisecond << min(n-1, 6)
	d = min(d, 5*time.Second)
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	return ctrl.Result{RequeueAfter: d}, nil
}

// invalid completes ro as Failed, reason InvalidSpec, with err's message
// (it names the field).
func (r *Reconciler) invalid(ctx context.Context, ro, before *v1alpha1.BMCRollout, err error, now time.Time) error {
	msg := strings.TrimPrefix(err.Error(), rollout.ErrInvalidSpec.Error()+": ")
	ro.Status.Result, ro.Status.Reason, ro.Status.Message = string(rollout.ResultFailed), conditions.ReasonInvalidSpec, msg
	ro.Status.CompletionTime = timestamp.Ptr(now)
	ro.Status.ObservedGeneration = ro.Generation
	conditions.MarkCompleted(&ro.Status.Conditions, ro.Generation, conditions.ResultFailed, conditions.ReasonInvalidSpec, msg, now)
	st := r.state(ro.UID)
	wrote, werr := r.write(ctx, ro, before, st)
	if werr != nil {
		if apierrors.IsConflict(werr) {
			r.conflicts.Add(1)
			r.mu.Lock()
			st.rv = ""
			r.mu.Unlock()
		}
		return werr // the rate limiter retries (the next read is past the cache)
	}
	if wrote {
		r.event(ro, corev1.EventTypeWarning, EventInvalidSpec, msg)
	}
	return nil
}

// approver is the approval gate: a Machine with the hold annotation "true"
// is held, and so is one that no longer exists (nothing to approve it;
// abort the rollout, or create it again).
func (r *Reconciler) approver(ctx context.Context, ro *v1alpha1.BMCRollout, spec *rollout.Spec) func(int) bool {
	return func(i int) bool {
		m := &v1alpha1.Machine{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ro.Namespace, Name: spec.Servers[i].Name}, m); err != nil {
			return false
		}
		return m.Annotations[v1alpha1.HoldAnnotation] != "true"
	}
}

// skipCheck is Decision.InState over r.InState: an error is "not known to
// be in state" (the server runs its job).
func (r *Reconciler) skipCheck(ro *v1alpha1.BMCRollout, spec *rollout.Spec) func(context.Context, int) bool {
	if r.InState == nil || spec.Policy.NoSkipCheck {
		return nil
	}
	return func(ctx context.Context, i int) bool {
		js := spec.JobSpec(i)
		if js.CredentialsRef != "" {
			js.CredentialsRef = ro.Namespace + "/" + js.CredentialsRef // as controller.JobFor resolves it
		}
		in, why, err := r.InState(ctx, js)
		log := ctrl.LoggerFrom(ctx)
		if err != nil {
			log.V(1).Info("skip check failed; the server runs its job", "server", spec.Servers[i].Name, "error", err.Error())
			return false
		}
		if in {
			log.V(1).Info("already in state; skipped", "server", spec.Servers[i].Name, "why", why)
		}
		return in
	}
}

// createJob creates server i's BMCJob. AlreadyExists is fine (an earlier
// reconcile, here or on another replica, created it); 422 makes the server
// fail InvalidSpec at the next pass.
func (r *Reconciler) createJob(ctx context.Context, ro *v1alpha1.BMCRollout, spec *rollout.Spec, i int, st *objState, now time.Time) (ok bool, err error) {
	jn := rollout.JobName(ro.Name, i, spec.Servers[i].Name)
	bj := &v1alpha1.BMCJob{ObjectMeta: metav1.ObjectMeta{Namespace: ro.Namespace, Name: jn, Labels: map[string]string{v1alpha1.RolloutLabel: ro.Name}}}
	bj.Spec.Spec = spec.JobSpec(i)
	if err := controllerutil.SetControllerReference(ro, bj, r.Client.Scheme()); err != nil {
		return true, err
	}
	err = r.Client.Create(ctx, bj)
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		r.mu.Lock()
		st.created[jn] = true
		r.mu.Unlock()
		return true, nil
	case apierrors.IsInvalid(err):
		r.mu.Lock()
		st.refused[i] = rollout.Outcome{Index: i, Job: jn, Result: conditions.ResultFailed, Reason: conditions.ReasonInvalidSpec, Message: err.Error(), Completed: now}
		r.mu.Unlock()
		return false, nil
	}
	return true, err
}

// record reports the rollout's own transitions (not the servers') as
// events on ro, after the write that made them.
func (r *Reconciler) record(ro *v1alpha1.BMCRollout, evs []rollout.Event) {
	for _, e := range evs {
		if e.Index >= 0 {
			continue
		}
		switch m := e.Message; {
		case m == "started":
			r.event(ro, corev1.EventTypeNormal, EventStarted, fmt.Sprintf("started: %d servers (maxUnavailable %s, canary %d)", len(ro.Status.Servers), limitString(ro.Spec.Policy.MaxUnavailable), ro.Spec.Policy.Canary))
		case m == "canary succeeded":
			r.event(ro, corev1.EventTypeNormal, EventCanarySucceeded, "the canary succeeded")
		case m == "canary failed":
			r.event(ro, corev1.EventTypeWarning, EventCanaryFailed, "the canary failed")
		case strings.HasPrefix(m, "halting: "):
			r.event(ro, corev1.EventTypeWarning, EventHalting, m)
		case strings.HasPrefix(m, "completed: "):
			typ := corev1.EventTypeWarning
			if ro.Status.Result == string(rollout.ResultSucceeded) {
				typ = corev1.EventTypeNormal
			}
			r.event(ro, typ, EventCompleted, ro.Status.Result+": "+ro.Status.Message)
		}
	}
}

func limitString(l *intstr.IntOrString) string {
	if l == nil {
		return "1"
	}
	return l.String()
}

func (r *Reconciler) event(ro *v1alpha1.BMCRollout, typ, reason, note string) {
	if r.Events != nil {
		r.Events.Eventf(ro, nil, typ, reason, "Rollout", "%s", note)
	}
}
