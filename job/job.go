package job

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/conditions"
	"github.com/bmckit/bmckit/internal/strictjson"
	"github.com/bmckit/bmckit/task"
	"github.com/bmckit/bmckit/timestamp"
)

// Spec is what a job should do: an ordered list of tasks against one BMC. It
// is a plain JSON struct a host can embed in its own CRD (inline, with
// `json:",inline"`): it carries kubebuilder markers, and
// zz_generated.deepcopy.go gives it DeepCopy and DeepCopyInto. See
// docs/kubernetes.md.
//
// +kubebuilder:object:generate=true
type Spec struct {
	// BMC is the BMC's address, e.g. "redfish://10.0.0.5/redfish/v1/Systems/1"
	// or "ipmi://10.0.0.6" (see bmc.ParseEndpoint).
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	BMC string `json:"bmc"`
	// CredentialsRef names the credentials; the host's bmc.CredentialsResolver
	// turns it into a username and password at run time. Passwords are never
	// stored in a job. At most 253 bytes (a Kubernetes object name).
	//
	// +kubebuilder:validation:MaxLength=253
	CredentialsRef string `json:"credentialsRef,omitempty"`
	// SystemUUID identifies the server for wait-for-boot tasks.
	//
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`
	SystemUUID string `json:"systemUUID,omitempty"`
	// Tasks run in order; the job stops at the first failed task.
	//
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	Tasks []task.Spec `json:"tasks"`
	// Timeout bounds the whole job. Zero means no job-level limit (each task
	// still has its own).
	Timeout task.Duration `json:"timeout,omitzero"`
	// SkipPreflight turns off the check that the BMC advertises what every
	// task needs before the job's first action (docs/preflight.md): for a
	// BMC that advertises a lack it does not have.
	//
	// +optional
	SkipPreflight bool `json:"skipPreflight,omitempty"`
}

// Status is what happened. Completed (a condition) says whether the job
// reached a terminal state; Result says how it ended. A host embeds it
// inline in its CRD's status, so that the conditions are at
// .status.conditions (where `kubectl wait --for=condition=Completed` looks).
//
// +kubebuilder:object:generate=true
type Status struct {
	// ObservedGeneration is the Generation the status was computed for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions holds Completed and Running.
	//
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []conditions.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	// Result is empty until Completed=True, then Succeeded, Failed or Canceled.
	Result conditions.Result `json:"result,omitempty"`
	// Reason is a CamelCase cause (the failed task's reason, e.g. Unauthorized, TimedOut).
	Reason string `json:"reason,omitempty"`
	// Message says what happened; for a failed job it names the failing task
	// and the BMC's error.
	Message string `json:"message,omitempty"`
	// CurrentTask is the index of the task being run (len(Tasks) when done).
	// Optional in a CRD's schema: a status merge patch leaves out a field
	// that did not change from the zero value (0 -> 0), and an API server
	// that requires it refuses every patch of a new object.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	CurrentTask int `json:"currentTask"`
	// Tasks holds one status per task in Spec.Tasks.
	Tasks          []task.Status   `json:"tasks,omitempty"`
	StartTime      *timestamp.Time `json:"startTime,omitempty"`
	CompletionTime *timestamp.Time `json:"completionTime,omitempty"`
	// Wire counts what the job's own BMC calls cost on the wire, when the
	// driver reports it, summed over the connections its steps used. Where
	// systems share one session (bmc.SystemOpener) it is this job's share,
	// not the session's totals: the session's login counts toward the job
	// that opened it and its logout toward the job whose completion closed
	// it, so the jobs on a session add up to its traffic (docs/jobs.md,
	// "Connections", says what no job counts).
	Wire *bmc.Stats `json:"wire,omitempty"`
}

// Job is a Spec with its Status. Name is unique within a Runner's Store.
type Job struct {
	Name string `json:"name"`
	// Generation counts spec changes; a host that edits a running job's spec
	// bumps it, and the job restarts from its first task.
	Generation int64 `json:"generation,omitempty"`
	// CreatedAt orders jobs on the same BMC (first come, first served).
	CreatedAt time.Time `json:"createdAt"`
	// CancelRequested asks the runner to stop the job at the next step; the
	// job completes with result Canceled.
	CancelRequested bool   `json:"cancelRequested,omitempty"`
	Spec            Spec   `json:"spec"`
	Status          Status `json:"status"`
}

// Completed reports whether the job reached a terminal state.
func (j *Job) Completed() bool {
	return conditions.IsTrue(j.Status.Conditions, conditions.TypeCompleted)
}

// ErrInvalidSpec is wrapped by every job validation error.
var ErrInvalidSpec = errors.New("invalid job spec")

// Limits of a job spec. Validate checks the field lengths; DecodeSpec and
// ReadSpec check all of them while reading, before anything is allocated
// for the input's content, so memory is bounded by the limits and not by
// the input. Every string field has a maximum: bmc MaxBMCLength,
// credentialsRef MaxCredentialsRefLength, systemUUID 36 (a UUID), and the
// task fields those of package task (name 253, bootDevice.uri and
// virtualMedia.imageURL 2048); no string in a spec may exceed 4096 bytes.
const (
	// MaxSpecBytes is the largest job spec DecodeSpec and ReadSpec read.
	MaxSpecBytes = 1 << 20
	// MaxTasks is the most tasks a job has.
	MaxTasks = 100
	// MaxBMCLength is the longest bmc address.
	MaxBMCLength = 2048
	// MaxCredentialsRefLength is the longest credentialsRef.
	MaxCredentialsRefLength = 253
)

// specLimits are what DecodeSpec checks while reading: no array (tasks,
// signals, deadlines, allowed sources) longer than MaxTasks, no string
// longer than 4096 bytes, no nesting deeper than 16.
var specLimits = strictjson.Limits{Bytes: MaxSpecBytes, String: 4096, Array: MaxTasks, Depth: 16}

// Validate checks the spec; errors wrap ErrInvalidSpec and name the field by
// its JSON path, e.g. `tasks[1].power.op: "of" is not one of ...`. A
// custom task (task.Spec.Custom) is checked for its shape only: whether its
// kind is registered and takes its params is checked by Runner.Submit and
// the Stepper, which know their StepperConfig.Kinds.
func (s *Spec) Validate() error { return s.validate(bmc.ParseEndpoint) }

// validate is Validate with the BMC address parsed by parse (the Stepper's
// cache on every job start).
func (s *Spec) validate(parse func(string) (bmc.Endpoint, error)) error {
	if len(s.BMC) > MaxBMCLength {
		return fmt.Errorf("%w: bmc: %d bytes, at most %d", ErrInvalidSpec, len(s.BMC), MaxBMCLength)
	}
	if _, err := parse(s.BMC); err != nil {
		return fmt.Errorf("%w: bmc: %v", ErrInvalidSpec, strings.TrimPrefix(err.Error(), "bmc: "))
	}
	if len(s.CredentialsRef) > MaxCredentialsRefLength {
		return fmt.Errorf("%w: credentialsRef: %d bytes, at most %d", ErrInvalidSpec, len(s.CredentialsRef), MaxCredentialsRefLength)
	}
	if len(s.Tasks) == 0 {
		return fmt.Errorf("%w: tasks: at least one task is required", ErrInvalidSpec)
	}
	if len(s.Tasks) > MaxTasks {
		return fmt.Errorf("%w: tasks: %d tasks, at most %d", ErrInvalidSpec, len(s.Tasks), MaxTasks)
	}
	if s.Timeout.Duration < 0 {
		return fmt.Errorf("%w: timeout: %s is negative", ErrInvalidSpec, s.Timeout.Duration)
	}
	for i := range s.Tasks {
		t := &s.Tasks[i]
		if err := t.Validate(); err != nil {
			return invalidAt(fmt.Sprintf("tasks[%d]", i), err)
		}
		if t.WaitForBoot != nil && t.WaitForBoot.SystemUUID == "" && s.SystemUUID == "" {
			return fmt.Errorf("%w: tasks[%d].waitForBoot.systemUUID: empty, and the job has no systemUUID", ErrInvalidSpec, i)
		}
	}
	if s.SystemUUID != "" {
		probe := task.Spec{WaitForBoot: &task.WaitForBootAction{SystemUUID: s.SystemUUID}}
		if err := probe.Validate(); err != nil {
			return fmt.Errorf("%w: systemUUID: %q is not a UUID", ErrInvalidSpec, truncate(s.SystemUUID, 80))
		}
	}
	return nil
}

// invalidAt is err, a validation error of the spec's part at path, as an
// ErrInvalidSpec that names the field: a *task.FieldError's Path is taken
// as relative to path ("tasks[1]" + "power.op").
func invalidAt(path string, err error) error {
	var fe *task.FieldError
	switch {
	case !errors.As(err, &fe):
		return fmt.Errorf("%w: %s: %w", ErrInvalidSpec, path, err)
	case fe.Path == "":
		return fmt.Errorf("%w: %s: %s", ErrInvalidSpec, path, fe.Msg)
	}
	return fmt.Errorf("%w: %s.%s: %s", ErrInvalidSpec, path, fe.Path, fe.Msg)
}

// DecodeSpec parses a JSON job spec strictly (unknown fields are errors) and
// validates it. Input over the limits (MaxSpecBytes, MaxTasks elements in
// any array, 4096 bytes in any string) is refused while it is read, with an
// error naming the limit and the JSON path.
func DecodeSpec(data []byte) (Spec, error) {
	return strictjson.DecodeValid[Spec](data, specLimits, ErrInvalidSpec)
}

// ReadSpec reads a JSON job spec from r (a file, stdin, a request body) and
// decodes it as DecodeSpec does. It reads at most MaxSpecBytes+1 bytes: a
// larger input is refused with an error naming the limit, not cut short.
func ReadSpec(r io.Reader) (Spec, error) {
	return strictjson.ReadValid[Spec](r, specLimits, ErrInvalidSpec)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
