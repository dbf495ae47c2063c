package secretcreds

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/bmckit/bmckit/bmc"
)

// Keys of a rotation's pending credentials, beside UsernameKey and
// PasswordKey in the same Secret.
const (
	PendingUsernameKey = "pendingUsername"
	PendingPasswordKey = "pendingPassword"
)

// Store is a bmc.CredentialsStore on the Secrets Resolver reads: the
// current credentials under "username" and "password" (as the Resolver
// reads them), a rotation's pending ones under "pendingUsername" and
// "pendingPassword" in the same Secret (docs/credential-rotation.md).
//
// Every change is one Update of the Secret with the resourceVersion it was
// read at, a compare-and-swap: two writers never both win, and an Update
// that returned is in etcd (durable). On a conflict the Secret is read
// again and the change decided again (client-go's retry.RetryOnConflict).
// Pending and the reads before a change go to Client, not to Resolver's
// Reader, so that they see the last write: give it the manager's
// APIReader-backed client, or any uncached client.
//
// Errors name the Secret and the key, never a value; nothing is logged.
//
// Resolve reads through Resolver's Reader (the cache) unless the Secret
// read there holds pending keys: a rotation is under way or has just been
// promoted, and a cached copy may be older than this process's last write
// (a promotion the cache has not seen would give the old, refused,
// password), so it reads again through Client. A Secret without pending
// keys costs no API call, as with the Resolver.
//
// RBAC: get and update on the Secrets it names. The kit's controller role
// (config/rbac) grants get, list and watch only: a host that rotates adds
// update (config/rotation), best on the Secrets of BMCs alone
// (resourceNames, or a namespace of their own), rather than on every
// Secret. Without it, a change fails with a permanent error that says so,
// before the BMC is touched (the pending write is the rotation's first).
type Store struct {
	Resolver
	// Client reads and updates the Secrets (uncached).
	Client client.Client
}

var _ bmc.CredentialsStore = Store{}

// Resolve implements bmc.CredentialsResolver (see [Store]).
func (s Store) Resolve(ctx context.Context, ref string) (bmc.Credentials, error) {
	if ref == "" {
		return bmc.Credentials{}, nil
	}
	sec, err := getSecret(ctx, s.Reader, ref)
	if err != nil {
		return bmc.Credentials{}, err
	}
	if len(sec.Data[PendingUsernameKey]) > 0 || len(sec.Data[PendingPasswordKey]) > 0 {
		if sec, err = getSecret(ctx, s.Client, ref); err != nil {
			return bmc.Credentials{}, err
		}
	}
	return currentOf(sec)
}

// Pending implements bmc.CredentialsStore.
func (s Store) Pending(ctx context.Context, ref string) (bmc.Credentials, bool, error) {
	_, p, err := s.read(ctx, ref)
	if err != nil || p.Pending == nil {
		return bmc.Credentials{}, false, err
	}
	return *p.Pending, true, nil
}

// SetPending implements bmc.CredentialsStore.
func (s Store) SetPending(ctx context.Context, ref string, c bmc.Credentials) error {
	return s.change(ctx, ref, func(p *bmc.CredentialsPair) (bool, error) { return true, p.SetPending(ref, c) })
}

// Promote implements bmc.CredentialsStore.
func (s Store) Promote(ctx context.Context, ref string, c bmc.Credentials) error {
	return s.change(ctx, ref, func(p *bmc.CredentialsPair) (bool, error) { return p.Promote(ref, c) })
}

// DropPending implements bmc.CredentialsStore.
func (s Store) DropPending(ctx context.Context, ref string, c bmc.Credentials) error {
	return s.change(ctx, ref, func(p *bmc.CredentialsPair) (bool, error) { return p.DropPending(ref, c) })
}

// change reads the Secret, applies f to its pair and, when f changed it,
// updates the Secret at the resourceVersion read.
func (s Store) change(ctx context.Context, ref string, f func(*bmc.CredentialsPair) (bool, error)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sec, p, err := s.read(ctx, ref)
		if err != nil {
			return err
		}
		changed, err := f(&p)
		if err != nil || !changed {
			return err
		}
		if sec.Data == nil {
			sec.Data = map[string][]byte{}
		}
		sec.Data[UsernameKey], sec.Data[PasswordKey] = []byte(p.Current.Username), []byte(p.Current.Password)
		delete(sec.Data, PendingUsernameKey)
		delete(sec.Data, PendingPasswordKey)
		if p.Pending != nil {
			sec.Data[PendingUsernameKey], sec.Data[PendingPasswordKey] = []byte(p.Pending.Username), []byte(p.Pending.Password)
		}
		if err := s.Client.Update(quiet(ctx), sec); err != nil {
			if apierrors.IsConflict(err) {
				return err // read again
			}
			if apierrors.IsForbidden(err) {
				return fmt.Errorf("updating secret %s/%s: forbidden: rotation needs update on this Secret, which the kit's controller role does not grant (contrib/kubernetes/config/rotation, docs/credential-rotation.md)", sec.Namespace, sec.Name)
			}
			return bmc.Transient(fmt.Errorf("updating secret %s/%s: %s", sec.Namespace, sec.Name, apierrors.ReasonForError(err)))
		}
		return nil
	})
}

// read gets the Secret of ref and its pair.
func (s Store) read(ctx context.Context, ref string) (*corev1.Secret, bmc.CredentialsPair, error) {
	sec, err := getSecret(ctx, s.Client, ref)
	if err != nil {
		return nil, bmc.CredentialsPair{}, err
	}
	d := sec.Data
	p := bmc.CredentialsPair{Current: bmc.Credentials{Username: string(d[UsernameKey]), Password: string(d[PasswordKey])}}
	pu, pp := d[PendingUsernameKey], d[PendingPasswordKey]
	switch {
	case len(pu) > 0 && len(pp) > 0:
		p.Pending = &bmc.Credentials{Username: string(pu), Password: string(pp)}
	case len(pu) > 0 || len(pp) > 0:
		return nil, bmc.CredentialsPair{}, fmt.Errorf("secret %s/%s has one of %q and %q without the other", sec.Namespace, sec.Name, PendingUsernameKey, PendingPasswordKey)
	}
	return sec, p, nil
}
