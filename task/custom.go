package task

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
)

// CustomAction runs a task kind the program embedding bmckit adds
// (job.StepperConfig.Kinds; docs/custom-kinds.md): Kind names it and Params
// are its parameters, which the kind validates. Validate checks only their
// shape; the Stepper and Runner.Submit, which know the registered kinds,
// refuse a kind they do not have and params the kind refuses.
type CustomAction struct {
	// Kind is the kind's registered name, domain-qualified:
	// "<DNS subdomain>/<name>", e.g. "example.com/raid-reset".
	//
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Kind string `json:"kind"`
	// Params is the kind's parameters: a JSON object of at most 16 KiB
	// (MaxCustomParamsBytes), or absent. Never put secrets here: params
	// are stored with the job.
	//
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Params CustomParams `json:"params,omitempty"`
}

// CustomParams is a custom task's params: raw JSON, decoded into the form
// json.Marshal writes (compact, with <, > and & escaped) and JSON null into
// nil, so that a spec decoded from any input re-encodes to the bytes it
// holds, and a stored record reads back equal.
type CustomParams []byte

// MarshalJSON returns p, or null when p is empty.
func (p CustomParams) MarshalJSON() ([]byte, error) {
	if len(p) == 0 {
		return []byte("null"), nil
	}
	return p, nil
}

// UnmarshalJSON sets *p to data in json.Marshal's form; nil for null.
func (p *CustomParams) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*p = nil
		return nil
	}
	c, err := json.Marshal(json.RawMessage(data))
	if err != nil {
		return err
	}
	*p = c
	return nil
}

// MaxCustomParamsBytes bounds CustomAction.Params: a job record, params
// included, is rewritten on every step.
const MaxCustomParamsBytes = 16 << 10

// customKindName is CustomAction.Kind's syntax (the CRD's Pattern).
var customKindName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)

// ValidCustomKindName reports why name cannot name a custom kind, or "".
func ValidCustomKindName(name string) string {
	switch {
	case name == "":
		return "empty: name a registered kind, e.g. example.com/raid-reset"
	case len(name) > 253:
		return "longer than 253 characters"
	case !customKindName.MatchString(name):
		return fmt.Sprintf("%q is not a domain-qualified name <DNS subdomain>/<name>, e.g. example.com/raid-reset", truncate(name, 80))
	}
	return ""
}

func (c *CustomAction) describe() string { return "custom " + c.Kind }

func (c *CustomAction) validate(path string) error {
	if msg := ValidCustomKindName(c.Kind); msg != "" {
		return fieldErr(path, "kind", "%s", msg)
	}
	if len(c.Params) > MaxCustomParamsBytes {
		return fieldErr(path, "params", "%d bytes, at most %d", len(c.Params), MaxCustomParamsBytes)
	}
	if p := bytes.TrimSpace(c.Params); len(p) > 0 && string(p) != "null" {
		if p[0] != '{' || !json.Valid(p) {
			return fieldErr(path, "params", "not a JSON object")
		}
	}
	return nil
}
