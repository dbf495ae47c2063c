package bmc

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
)

const redacted = "<redacted>"

// Credentials authenticate to a BMC. They are resolved by the host at run
// time and never persisted by bmckit. String, Format, JSON and slog output
// redact the password, so a Credentials value that reaches a log by accident
// does not leak it.
type Credentials struct {
	Username string
	Password string
}

// String redacts the password.
func (c Credentials) String() string {
	return fmt.Sprintf("{Username:%s Password:%s}", c.Username, redacted)
}

// GoString redacts the password (for %#v).
func (c Credentials) GoString() string {
	return fmt.Sprintf("bmc.Credentials{Username:%q, Password:%q}", c.Username, redacted)
}

// Format makes every verb (%v, %+v, %s, %q, %#v) print the redacted form.
func (c Credentials) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = fmt.Fprint(f, c.GoString())
		return
	}
	_, _ = fmt.Fprint(f, c.String())
}

// MarshalJSON redacts the password.
func (c Credentials) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Username string `json:"username"`
		Password string `json:"password"`
	}{c.Username, redacted})
}

// LogValue redacts the password for log/slog.
func (c Credentials) LogValue() slog.Value {
	return slog.GroupValue(slog.String("username", c.Username), slog.String("password", redacted))
}

// CredentialsResolver turns a job's CredentialsRef into credentials at run
// time (a Kubernetes Secret lookup, a vault, a file). It must be safe for
// concurrent use. Errors must not contain the secret.
type CredentialsResolver interface {
	Resolve(ctx context.Context, ref string) (Credentials, error)
}

// CredentialsFunc adapts a function to a CredentialsResolver.
type CredentialsFunc func(ctx context.Context, ref string) (Credentials, error)

// Resolve calls f.
func (f CredentialsFunc) Resolve(ctx context.Context, ref string) (Credentials, error) {
	return f(ctx, ref)
}

// StaticCredentials resolves references from a fixed map, for tests and
// examples.
type StaticCredentials map[string]Credentials

// Resolve implements CredentialsResolver.
func (m StaticCredentials) Resolve(_ context.Context, ref string) (Credentials, error) {
	c, ok := m[ref]
	if !ok {
		return Credentials{}, fmt.Errorf("no credentials named %q", ref)
	}
	return c, nil
}
