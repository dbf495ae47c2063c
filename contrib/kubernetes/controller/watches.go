package controller

import (
	"context"
	"maps"
	"slices"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// IgnoreStatusOnlyUpdates is a predicate for a controller's objects that
// drops an update event when the object's generation, deletion timestamp,
// labels, annotations and finalizers are all unchanged: an update of the
// status only (or of nothing, as a resync), which is what every status
// patch of [Reconciler.Step] produces. Create, delete and generic events
// pass.
//
// Dropping them costs a job nothing: Step never waits for an event of its
// own write. Whenever the job is not done it returns a RequeueAfter (at
// once after a change, a backoff after a conflict, the poll interval while
// the BMC works), and a BMC event the job waits for arrives through
// [Reconciler.WakeSource]. Without the predicate every status patch also
// enqueues the object (merged with Step's own requeue while that is still
// queued), for a reconcile with nothing new to see.
//
// A host whose Reconcile also acts on status changes made by others does
// not use it for that type.
func IgnoreStatusOnlyUpdates() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld == nil || e.ObjectNew == nil {
			return true
		}
		return !sameMeta(e.ObjectOld, e.ObjectNew)
	}}
}

// sameMeta reports whether a and b have the same generation, deletion
// timestamp, labels, annotations and finalizers.
func sameMeta(a, b client.Object) bool {
	da, db := a.GetDeletionTimestamp(), b.GetDeletionTimestamp()
	return a.GetGeneration() == b.GetGeneration() &&
		(da == nil) == (db == nil) && (da == nil || da.Equal(db)) &&
		maps.Equal(a.GetLabels(), b.GetLabels()) &&
		maps.Equal(a.GetAnnotations(), b.GetAnnotations()) &&
		slices.Equal(a.GetFinalizers(), b.GetFinalizers())
}

// WakeSource is the source of the Stepper's wakes for the controller of O's
// objects: each job on r.Wakes (sent by [WakeFunc] when a BMC event a job
// waits for landed) is enqueued at once. Add it to exactly one controller
// (builder.Builder.WatchesRawSource): two sources on one Wakes channel would each
// get only some of the wakes. With no Wakes it is a source that never
// fires (the jobs are stepped on their RequeueAfter).
func (r *Reconciler[O]) WakeSource() source.Source {
	if r.Wakes == nil {
		return source.Func(func(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request]) error { return nil })
	}
	return source.Channel(r.Wakes, &handler.EnqueueRequestForObject{})
}

// ErrorBackoff is the rate limiter of the kit's controller (and one for a
// host's own, through WithOptions): controller-runtime's default, except
// that an object whose step failed (the API server unreachable, a store
// write refused) is retried after 500 ms doubling to 30 s instead of 5 ms
// doubling. A step that fails to store what it read from the BMC reads it
// again at its next try, over a new session once its connection was closed
// (a completed job's is closed before the completion is written): at 5 ms
// one job logged in to its BMC 11 times during a 7-second API-server
// outage (TestAPIServerOutageOnRealAPIServer).
func ErrorBackoff() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](500*time.Millisecond, 30*time.Second),
		// The default's overall bound: 10 retries per second, bursts of 100.
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}
