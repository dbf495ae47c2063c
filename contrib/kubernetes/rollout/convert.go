package rollout

import (
	"fmt"
	"math"
	"sort"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/contrib/kubernetes/api/v1alpha1"
	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/rollout"
)

// limit reads a policy limit: a count, or a percentage string ("5%"; a
// plain number string counts too).
func limit(field string, v *intstr.IntOrString) (rollout.Limit, error) {
	if v == nil {
		return rollout.Limit{}, nil
	}
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return rollout.Limit{}, fmt.Errorf("%s: %d is negative", field, v.IntVal)
		}
		return rollout.Count(int(v.IntVal)), nil
	}
	l, err := rollout.ParseLimit(v.StrVal)
	if err != nil {
		return rollout.Limit{}, fmt.Errorf("%s: %w", field, err)
	}
	return l, nil
}

// policyOf is the API's policy as rollout.Policy.
func policyOf(p *v1alpha1.RolloutPolicy) (rollout.Policy, error) {
	out := rollout.Policy{Canary: p.Canary, CanaryApproval: p.CanaryApproval, NoSkipCheck: p.NoSkipCheck}
	var err error
	if out.MaxUnavailable, err = limit("policy.maxUnavailable", p.MaxUnavailable); err != nil {
		return out, err
	}
	if out.FailureBudget, err = limit("policy.failureBudget", p.FailureBudget); err != nil {
		return out, err
	}
	for i, g := range p.MaxUnavailablePerGroup {
		m, err := limit(fmt.Sprintf("policy.maxUnavailablePerGroup[%d].max", i), &g.Max)
		if err != nil {
			return out, err
		}
		out.MaxUnavailablePerGroup = append(out.MaxUnavailablePerGroup, rollout.GroupLimit{Label: g.Label, Max: m})
	}
	return out, nil
}

// templateOf is the template as a job.Spec without a BMC.
func templateOf(t *v1alpha1.RolloutTemplate) job.Spec {
	js := job.Spec{CredentialsRef: t.CredentialsRef, Timeout: t.Timeout, SkipPreflight: t.SkipPreflight}
	for i := range t.Tasks {
		js.Tasks = append(js.Tasks, *t.Tasks[i].DeepCopy())
	}
	return js
}

// specOf is the rollout.Spec of ro: its template and policy over the
// servers of its status (the snapshot). Errors name the field.
func specOf(ro *v1alpha1.BMCRollout) (*rollout.Spec, error) {
	pol, err := policyOf(&ro.Spec.Policy)
	if err != nil {
		return nil, err
	}
	s := &rollout.Spec{Template: templateOf(&ro.Spec.Template), Policy: pol}
	for _, sv := range ro.Status.Servers {
		s.Servers = append(s.Servers, rollout.Server{Name: sv.Name, BMC: sv.BMC, CredentialsRef: sv.CredentialsRef, Labels: sv.Labels})
	}
	return s, nil
}

// snapshot is the servers of the selected Machines, sorted by name: each
// Machine's BMC address and credentials reference, and the labels the
// policy's group limits name. A BMC address that does not parse is stored
// redacted (it may hold credentials; the rollout is refused anyway), and
// reported by bad (Machine name -> its error).
func snapshot(ms []v1alpha1.Machine, p *v1alpha1.RolloutPolicy) (servers []v1alpha1.RolloutServer, bad error) {
	sort.Slice(ms, func(a, b int) bool { return ms[a].Name < ms[b].Name })
	for i := range ms {
		m := &ms[i]
		sv := v1alpha1.RolloutServer{Name: m.Name, BMC: m.Spec.BMC, CredentialsRef: m.Spec.CredentialsRef}
		if _, err := bmc.ParseEndpoint(m.Spec.BMC); err != nil {
			sv.BMC = bmc.RedactURL(m.Spec.BMC)
			if bad == nil {
				bad = fmt.Errorf("servers[%d].bmc (Machine %s): %w", i, m.Name, err)
			}
		}
		for _, g := range p.MaxUnavailablePerGroup {
			if v, ok := m.Labels[g.Label]; ok {
				if sv.Labels == nil {
					sv.Labels = map[string]string{}
				}
				sv.Labels[g.Label] = v
			}
		}
		servers = append(servers, sv)
	}
	return servers, bad
}

// toCore is the API status as rollout.Status (the snapshot aside).
func toCore(s *v1alpha1.BMCRolloutStatus) rollout.Status {
	out := rollout.Status{
		Result: rollout.Result(s.Result), Reason: s.Reason, Message: s.Message, States: s.States,
		Counts: rollout.Counts{
			Pending: s.Counts.Pending, Held: s.Counts.Held, Running: s.Counts.Running,
			Succeeded: s.Counts.Succeeded, Failed: s.Counts.Failed, Skipped: s.Counts.Skipped,
		},
		FailureBudget: s.FailureBudget, FailureBudgetLeft: s.FailureBudgetLeft, Halt: s.Halt,
		JobSeconds: float64(s.JobMilliseconds) / 1000, JobsTimed: s.JobsTimed, Estimate: s.Estimate,
	}
	for _, c := range s.Conditions {
		out.Conditions = append(out.Conditions, c)
	}
	if c := s.Canary; c != nil {
		out.Canary = rollout.CanaryStatus{Size: c.Size, Succeeded: c.Succeeded, Failed: c.Failed, Result: rollout.Result(c.Result), Servers: append([]int(nil), c.Servers...)}
	}
	for _, f := range s.Failures {
		out.Failures = append(out.Failures, rollout.Failure{Server: f.Server, Job: f.Job, Reason: f.Reason, Message: f.Message})
	}
	for _, r := range s.Running {
		out.Running = append(out.Running, rollout.RunningServer{Index: r.Index, Since: r.Since})
	}
	if s.StartTime != nil {
		t := *s.StartTime
		out.StartTime = &t
	}
	if s.CompletionTime != nil {
		t := *s.CompletionTime
		out.CompletionTime = &t
	}
	return out
}

// fromCore writes st into the API status s (its snapshot and observed
// generation kept), every condition carrying generation.
func fromCore(st *rollout.Status, s *v1alpha1.BMCRolloutStatus, generation int64) {
	servers, og := s.Servers, s.ObservedGeneration
	*s = v1alpha1.BMCRolloutStatus{
		ObservedGeneration: og, Servers: servers,
		Result: string(st.Result), Reason: st.Reason, Message: st.Message, States: st.States,
		Counts: v1alpha1.RolloutCounts{
			Pending: st.Counts.Pending, Held: st.Counts.Held, Running: st.Counts.Running,
			Succeeded: st.Counts.Succeeded, Failed: st.Counts.Failed, Skipped: st.Counts.Skipped,
		},
		FailureBudget: st.FailureBudget, FailureBudgetLeft: st.FailureBudgetLeft, Halt: st.Halt,
		JobMilliseconds: int64(math.Round(st.JobSeconds * 1000)),
		JobsTimed:       st.JobsTimed, Estimate: st.Estimate,
	}
	for _, c := range st.Conditions {
		c.ObservedGeneration = generation
		s.Conditions = append(s.Conditions, c)
	}
	if c := st.Canary; c.Size > 0 || len(c.Servers) > 0 || c.Result != "" {
		s.Canary = &v1alpha1.RolloutCanary{Size: c.Size, Succeeded: c.Succeeded, Failed: c.Failed, Result: string(c.Result), Servers: append([]int(nil), c.Servers...)}
	}
	for _, f := range st.Failures {
		s.Failures = append(s.Failures, v1alpha1.RolloutFailure{Server: f.Server, Job: f.Job, Reason: f.Reason, Message: f.Message})
	}
	for _, r := range st.Running {
		s.Running = append(s.Running, v1alpha1.RolloutRunning{Index: r.Index, Since: r.Since})
	}
	if st.StartTime != nil {
		t := *st.StartTime
		s.StartTime = &t
	}
	if st.CompletionTime != nil {
		t := *st.CompletionTime
		s.CompletionTime = &t
	}
}
