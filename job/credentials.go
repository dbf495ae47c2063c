package job

import (
	"context"
	"fmt"

	"github.com/bmckit/bmckit/bmc"
)

// CredentialsResolver turns a job's CredentialsRef into credentials at run
// time (a Kubernetes Secret lookup, a vault, a file). It must be safe for
// concurrent use. Errors must not contain the secret.
type CredentialsResolver interface {
	Resolve(ctx context.Context, ref string) (bmc.Credentials, error)
}

// CredentialsFunc adapts a function to a CredentialsResolver.
type CredentialsFunc func(ctx context.Context, ref string) (bmc.Credentials, error)

// Resolve calls f.
func (f CredentialsFunc) Resolve(ctx context.Context, ref string) (bmc.Credentials, error) {
	return f(ctx, ref)
}

// StaticCredentials resolves references from a fixed map, for tests and
// examples.
type StaticCredentials map[string]bmc.Credentials

// Resolve implements CredentialsResolver.
func (m StaticCredentials) Resolve(_ context.Context, ref string) (bmc.Credentials, error) {
	c, ok := m[ref]
	if !ok {
		return bmc.Credentials{}, fmt.Errorf("no credentials named %q", ref)
	}
	return c, nil
}
