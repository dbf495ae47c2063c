// Package secretcreds resolves bmckit credentials references to the
// username and password of Kubernetes Secrets, read at every resolve so that
// a rotated Secret is used by the next BMC connection.
package secretcreds

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/bmckit/bmckit/bmc"
)

// Keys of a BMC credentials Secret (the ones Rufio uses).
const (
	UsernameKey = "username"
	PasswordKey = "password"
)

// Resolver is a bmc.CredentialsResolver over Kubernetes Secrets:
// a reference "namespace/name" (what controller.JobFor makes of an object's
// credentialsRef) names a Secret whose data holds the keys "username" and
// "password". An empty reference resolves to empty credentials.
//
// It reads the Secret at every resolve, which the Stepper does whenever it
// needs a BMC connection; with the manager's client those reads come from the
// informer cache, so they cost no API call, and a rotated Secret is used as
// soon as the cache has it. The Stepper's connection pool keys sessions by a
// hash of the credentials, so new credentials close the old session and log
// in again with the new ones.
//
// Errors name the Secret and the missing key, never a value; nothing is
// logged. A Secret that does not exist (yet) or an API error is transient
// (the task retries with backoff within its timeout: a Secret applied
// together with the BMCJob may reach the cache second); a Secret without
// the keys, or a malformed reference, is permanent (the task fails).
type Resolver struct {
	// Reader reads Secrets: the manager's client (cached; the manager
	// then needs RBAC to list and watch Secrets) or its APIReader (one GET
	// per resolve).
	Reader client.Reader
}

var _ bmc.CredentialsResolver = Resolver{}

// Resolve implements bmc.CredentialsResolver.
func (s Resolver) Resolve(ctx context.Context, ref string) (bmc.Credentials, error) {
	if ref == "" {
		return bmc.Credentials{}, nil // a BMC without authentication
	}
	sec, err := getSecret(ctx, s.Reader, ref)
	if err != nil {
		return bmc.Credentials{}, err
	}
	return currentOf(sec)
}

// getSecret reads the Secret that ref ("namespace/name") names through r.
// A missing Secret or an API error is transient.
func getSecret(ctx context.Context, r client.Reader, ref string) (*corev1.Secret, error) {
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("credentials reference %q: want namespace/name of a Secret", ref)
	}
	var sec corev1.Secret
	if err := r.Get(quiet(ctx), types.NamespacedName{Namespace: ns, Name: name}, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, bmc.Transient(fmt.Errorf("secret %s/%s not found", ns, name))
		}
		return nil, bmc.Transient(fmt.Errorf("reading secret %s/%s: %w", ns, name, err))
	}
	return &sec, nil
}

// quiet is ctx without its logger, for every API call that carries a
// Secret. client-go logs request and response bodies at V(8) to the logger
// of the call's context (a controller's per-reconcile logger), and a
// Secret's protobuf body holds the password as raw bytes, readable in the
// hex dump's text column: TestRotationSIGKILLOnRealAPIServer found it in a
// controller's log. Errors are still returned.
func quiet(ctx context.Context) context.Context {
	return logr.NewContext(ctx, logr.Discard())
}

// currentOf is the current credentials of sec; an error names the missing
// key.
func currentOf(sec *corev1.Secret) (bmc.Credentials, error) {
	for _, key := range []string{UsernameKey, PasswordKey} {
		if len(sec.Data[key]) == 0 {
			return bmc.Credentials{}, fmt.Errorf("secret %s/%s has no %q key (want %q and %q)", sec.Namespace, sec.Name, key, UsernameKey, PasswordKey)
		}
	}
	return bmc.Credentials{Username: string(sec.Data[UsernameKey]), Password: string(sec.Data[PasswordKey])}, nil
}
