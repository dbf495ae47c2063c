package job

import "context"

// This file is the controller path's safe status patch: StepPatch hands the
// host the status before and after each change, as copies the Stepper never
// touches again, so a patch built from them always carries the change.

// PatchFunc stores a job's status in the host's own object, by a patch from
// before to after (a controller's client.MergeFrom). before is the status as
// the previous call stored it (for the first call, as j held it when
// [Stepper.StepPatch] was called); after is the status to store now. Both are
// deep copies that belong to the callee: the Stepper never changes them, so
// the host may put after into its object as it is, and build the patch's base
// from before. If it returns an error, the step stops (see [PersistFunc]).
type PatchFunc func(ctx context.Context, before, after Status) error

// StepPatch is [Stepper.Step] for a host that keeps the job's status in its
// own object and stores it with a patch, as a Kubernetes controller does.
//
// Step mutates j in place, and j's status usually shares memory with the
// host's object (a Job built from obj.Status shares its Conditions and Tasks
// slices). A persist that takes the patch's base with obj.DeepCopy() then
// copies a status Step has already changed, and the patch silently drops
// the change: the stored object reads Result=Succeeded with Completed=False
// and Running=True. StepPatch rules that out: it first gives j a status of
// its own (so j no longer shares memory with the object it was built from),
// and calls persist with the status before and after each change, both
// fresh copies. A persist written as
//
//	func(ctx context.Context, before, after job.Status) error {
//		base := obj.DeepCopy()
//		base.Status.Status = before
//		obj.Status.Status = after
//		return c.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
//	}
//
// sends exactly the change. (With the optimistic lock, a step that ran on a
// stale cached object fails with a conflict instead of writing over a newer
// status; the next reconcile reads the newer one.)
//
// Everything else is Step's: the result, errors, locking and the calls of
// persist (intent before every BMC action, results after). After it returns,
// j holds the status of the last change, stored or not; use the object the
// persist calls updated, not j, for the next step.
func (s *Stepper) StepPatch(ctx context.Context, j *Job, persist PatchFunc) (StepResult, error) {
	stored := copyStatus(&j.Status)
	j.Status = copyStatus(&j.Status)
	return s.Step(ctx, j, func(ctx context.Context, j *Job) error {
		before, after := copyStatus(&stored), copyStatus(&j.Status)
		if err := persist(ctx, before, after); err != nil {
			return err
		}
		stored = copyStatus(&j.Status)
		return nil
	})
}

// copyStatus returns a deep copy of s: no slice, map or pointer of the copy
// is shared with s (the generated DeepCopy; TestDeepCopyCoversEveryField
// keeps it complete).
func copyStatus(s *Status) Status { return *s.DeepCopy() }
