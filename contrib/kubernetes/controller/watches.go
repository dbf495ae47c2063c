package controller

import (
	"context"
	"maps"
	"slices"

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
// (builder.WatchesRawSource): two sources on one Wakes channel would each
// get only some of the wakes. With no Wakes it is a source that never
// fires (the jobs are stepped on their RequeueAfter).
func (r *Reconciler[O]) WakeSource() source.Source {
	if r.Wakes == nil {
		return source.Func(func(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request]) error { return nil })
	}
	return source.Channel(r.Wakes, &handler.EnqueueRequestForObject{})
}
