package rollout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/bmckit/bmckit/internal/strictjson"
	"github.com/bmckit/bmckit/job"
)

// Spec is what a rollout does: one job template run on every server, under a
// policy. It is plain JSON (docs/rollouts.md).
type Spec struct {
	// Template is every server's job: its BMC, CredentialsRef and SystemUUID
	// are filled in from the server (CredentialsRef and SystemUUID only where
	// the server names one). Any tasks, built-in or custom kinds.
	Template job.Spec `json:"template"`
	// Servers are the rollout's targets, started in this order (the canary
	// first).
	Servers []Server `json:"servers"`
	// Policy bounds how the rollout goes.
	Policy Policy `json:"policy"`
}

// Server is one target of a rollout.
type Server struct {
	// Name is unique in the rollout: letters, digits, '.', '_' or '-', at
	// most 63 bytes. It is part of the server's job name.
	Name string `json:"name"`
	// BMC is the server's BMC address (bmc.ParseEndpoint).
	BMC string `json:"bmc"`
	// CredentialsRef names its credentials; empty: the template's.
	CredentialsRef string `json:"credentialsRef,omitempty"`
	// SystemUUID identifies the server for wait-for-boot tasks; empty: the
	// template's.
	SystemUUID string `json:"systemUUID,omitempty"`
	// Labels group servers (rack, chassis, model) for
	// Policy.MaxUnavailablePerGroup.
	Labels map[string]string `json:"labels,omitempty"`
}

// Policy is how a rollout goes.
type Policy struct {
	// MaxUnavailable bounds the servers counted as unavailable at once: from
	// the write that starts a server until the write that records its job's
	// completion (docs/rollouts.md, "What counts as unavailable"). A count,
	// or a percentage of the servers, rounded down but at least 1. Zero: 1.
	MaxUnavailable Limit `json:"maxUnavailable,omitzero"`
	// MaxUnavailablePerGroup adds one bound per label: at most Max servers
	// unavailable at once among those with the same value of Label (a
	// percentage is of that group's size, at least 1). Servers without the
	// label are one group.
	MaxUnavailablePerGroup []GroupLimit `json:"maxUnavailablePerGroup,omitempty"`
	// Canary is how many servers must run their job and succeed before any
	// other starts; a canary server that fails halts the rollout.
	Canary int `json:"canary,omitempty"`
	// CanaryApproval: after the canary succeeded, wait for ApproveCanary.
	CanaryApproval bool `json:"canaryApproval,omitempty"`
	// FailureBudget is how many failed servers the rollout tolerates: a
	// count, or a percentage of the servers rounded down. One failure more
	// halts it. Zero: the first failure halts it.
	FailureBudget Limit `json:"failureBudget,omitzero"`
	// NoSkipCheck turns off the check that skips a server already in the
	// wanted state (job.Runner.InState) before it starts.
	NoSkipCheck bool `json:"noSkipCheck,omitempty"`
}

// GroupLimit is a MaxUnavailable per value of a label.
type GroupLimit struct {
	Label string `json:"label"`
	Max   Limit  `json:"max"`
}

// Limit is a count or a percentage. In JSON it is a number (50) or a string
// ("50", "5%").
type Limit struct {
	// Value is the count, or the percentage when Percent is set.
	Value   int
	Percent bool
}

// Count is a Limit of n.
func Count(n int) Limit { return Limit{Value: n} }

// Percent is a Limit of p percent.
func Percent(p int) Limit { return Limit{Value: p, Percent: true} }

// IsZero reports whether l is unset (zero).
func (l Limit) IsZero() bool { return l.Value == 0 }

// String is "50" or "5%".
func (l Limit) String() string {
	if l.Percent {
		return strconv.Itoa(l.Value) + "%"
	}
	return strconv.Itoa(l.Value)
}

// Of is l applied to total: the count, or floor(total * percent / 100).
func (l Limit) Of(total int) int {
	if l.Percent {
		return total * l.Value / 100
	}
	return l.Value
}

// MarshalJSON writes a count as a number and a percentage as "p%".
func (l Limit) MarshalJSON() ([]byte, error) {
	if l.Percent {
		return json.Marshal(l.String())
	}
	return []byte(strconv.Itoa(l.Value)), nil
}

// UnmarshalJSON reads 50, "50" or "5%".
func (l *Limit) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	v, err := ParseLimit(s)
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// ParseLimit reads "50" or "5%".
func ParseLimit(s string) (Limit, error) {
	pct := strings.HasSuffix(s, "%")
	n, err := strconv.Atoi(strings.TrimSuffix(s, "%"))
	if err != nil || n < 0 || (pct && n > 100) {
		return Limit{}, fmt.Errorf("%q is not a count or a percentage from 0%% to 100%%", truncate(s, 40))
	}
	return Limit{Value: n, Percent: pct}, nil
}

// Limits the spec must stay within (a rollout's record keeps one byte per
// server, and the spec is one stored value of at most storage.MaxValueSize).
const (
	MaxServers       = 20000
	MaxServerName    = 63
	MaxNameLength    = 63
	MaxGroupLimits   = 8
	maxLabelsPerHost = 32
)

var (
	// rollout names: no '.', so that <rollout>.<index>.<server> job names
	// of two rollouts never collide.
	nameRE       = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_-]*[A-Za-z0-9])?$`)
	serverNameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)
)

// ErrInvalidSpec wraps every validation error of a rollout's spec.
var ErrInvalidSpec = errors.New("invalid rollout spec")

// ValidateName checks a rollout's name.
func ValidateName(name string) error {
	if len(name) > MaxNameLength || !nameRE.MatchString(name) {
		return fmt.Errorf("rollout: invalid name %q: use 1-%d letters, digits, '_' or '-', starting and ending with a letter or digit", truncate(name, 80), MaxNameLength)
	}
	return nil
}

// Validate checks the spec; every server's job spec is validated as the
// Runner would (job.Spec.Validate). Errors wrap ErrInvalidSpec and name the
// field ("servers[3].bmc: ...").
func (s *Spec) Validate() error {
	if len(s.Servers) == 0 {
		return invalid("servers: at least one server is required")
	}
	if len(s.Servers) > MaxServers {
		return invalid("servers: %d servers, at most %d", len(s.Servers), MaxServers)
	}
	if err := s.Policy.validate(); err != nil {
		return err
	}
	seen := make(map[string]int, len(s.Servers))
	for i := range s.Servers {
		sv := &s.Servers[i]
		if len(sv.Name) > MaxServerName || !serverNameRE.MatchString(sv.Name) {
			return invalid("servers[%d].name: %q: use 1-%d letters, digits, '.', '_' or '-', starting and ending with a letter or digit", i, truncate(sv.Name, 80), MaxServerName)
		}
		if j, dup := seen[sv.Name]; dup {
			return invalid("servers[%d].name: %q is servers[%d]'s name too", i, sv.Name, j)
		}
		seen[sv.Name] = i
		if len(sv.Labels) > maxLabelsPerHost {
			return invalid("servers[%d].labels: %d labels, at most %d", i, len(sv.Labels), maxLabelsPerHost)
		}
		js := s.JobSpec(i)
		if err := js.Validate(); err != nil {
			msg := strings.TrimPrefix(err.Error(), job.ErrInvalidSpec.Error()+": ")
			if strings.HasPrefix(msg, "tasks") || strings.HasPrefix(msg, "timeout") {
				return invalid("template.%s", msg)
			}
			return invalid("servers[%d].%s", i, msg)
		}
	}
	return nil
}

func (p *Policy) validate() error {
	if p.MaxUnavailable.Value < 0 {
		return invalid("policy.maxUnavailable: %s is negative", p.MaxUnavailable)
	}
	if p.Canary < 0 {
		return invalid("policy.canary: %d is negative", p.Canary)
	}
	if len(p.MaxUnavailablePerGroup) > MaxGroupLimits {
		return invalid("policy.maxUnavailablePerGroup: %d limits, at most %d", len(p.MaxUnavailablePerGroup), MaxGroupLimits)
	}
	for i, g := range p.MaxUnavailablePerGroup {
		if g.Label == "" {
			return invalid("policy.maxUnavailablePerGroup[%d].label: empty", i)
		}
		if g.Max.Value <= 0 {
			return invalid("policy.maxUnavailablePerGroup[%d].max: %s: at least 1 (or 1%%)", i, g.Max)
		}
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidSpec, fmt.Sprintf(format, args...))
}

// JobSpec is server i's job: the template with its BMC, credentials and
// system UUID.
func (s *Spec) JobSpec(i int) job.Spec {
	js := *s.Template.DeepCopy()
	sv := &s.Servers[i]
	js.BMC = sv.BMC
	if sv.CredentialsRef != "" {
		js.CredentialsRef = sv.CredentialsRef
	}
	if sv.SystemUUID != "" {
		js.SystemUUID = sv.SystemUUID
	}
	return js
}

// JobName is the name of server i's job in rollout name:
// <rollout>.<index>.<server>.
func JobName(name string, i int, server string) string {
	return name + "." + strconv.Itoa(i) + "." + server
}

// maxUnavailable is the policy's bound for n servers.
func (p *Policy) maxUnavailable(n int) int {
	if p.MaxUnavailable.IsZero() {
		return 1
	}
	return max(1, p.MaxUnavailable.Of(n))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// MaxSpecBytes bounds a rollout spec read by DecodeSpec and ReadSpec (a
// fleet of MaxServers servers with labels fits).
const MaxSpecBytes = 8 << 20

// specLimits are what DecodeSpec checks while reading: no array longer
// than MaxServers, no string longer than 4096 bytes, no nesting deeper than
// 16.
var specLimits = strictjson.Limits{Bytes: MaxSpecBytes, String: 4096, Array: MaxServers, Depth: 16}

// DecodeSpec decodes a JSON rollout spec strictly (unknown fields are
// errors) and validates it; errors wrap ErrInvalidSpec and name the field.
func DecodeSpec(data []byte) (Spec, error) {
	return strictjson.DecodeValid[Spec](data, specLimits, ErrInvalidSpec)
}

// ReadSpec reads a JSON rollout spec from r, at most MaxSpecBytes, and
// decodes it as DecodeSpec does.
func ReadSpec(r io.Reader) (Spec, error) {
	return strictjson.ReadValid[Spec](r, specLimits, ErrInvalidSpec)
}

// ErrTrailingData is what DecodeServer's error wraps when something follows
// the server's JSON object (two servers on one line of a JSON-lines file).
var ErrTrailingData = strictjson.ErrTrailingData

// DecodeServer decodes one server's JSON object strictly: unknown fields
// are errors, and nothing but whitespace may follow it. It does not
// validate the server (Spec.Validate does, with the rest of the spec): for
// tools that read a fleet one server at a time, such as bmcjob's JSON lines.
func DecodeServer(data []byte) (Server, error) {
	var s Server
	if err := strictjson.Decode(data, &s); err != nil {
		return Server{}, err
	}
	return s, nil
}
