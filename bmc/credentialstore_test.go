package bmc_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
)

var (
	oldCreds = bmc.Credentials{Username: "admin", Password: "old-" + secretPW}
	newCreds = bmc.Credentials{Username: "admin", Password: "new-" + secretPW}
)

// storeFactories are the in-tree CredentialsStores, each holding ref "r"
// with oldCreds current.
func storeFactories() map[string]func(t *testing.T) bmc.CredentialsStore {
	return map[string]func(t *testing.T) bmc.CredentialsStore{
		"memory": func(*testing.T) bmc.CredentialsStore {
			return bmc.NewMemoryCredentials(map[string]bmc.Credentials{"r": oldCreds})
		},
		"file": func(t *testing.T) bmc.CredentialsStore {
			s, err := bmc.OpenFileCredentials(filepath.Join(t.TempDir(), "creds.json"))
			require.NoError(t, err)
			require.NoError(t, s.Set(context.Background(), "r", oldCreds))
			return s
		},
	}
}

func TestCredentialsStoreContract(t *testing.T) {
	ctx := context.Background()
	for name, mk := range storeFactories() {
		t.Run(name, func(t *testing.T) {
			s := mk(t)
			_, has, err := s.Pending(ctx, "r")
			require.NoError(t, err)
			assert.False(t, has)

			require.NoError(t, s.SetPending(ctx, "r", bmc.Credentials{Username: "x", Password: "other"}))
			require.NoError(t, s.SetPending(ctx, "r", newCreds), "SetPending replaces the pending set")
			p, has, err := s.Pending(ctx, "r")
			require.NoError(t, err)
			require.True(t, has)
			assert.Equal(t, newCreds, p)
			cur, err := s.Resolve(ctx, "r")
			require.NoError(t, err)
			assert.Equal(t, oldCreds, cur, "SetPending leaves the current credentials")

			wrong := bmc.Credentials{Username: "admin", Password: "wrong-" + secretPW}
			err = s.Promote(ctx, "r", wrong)
			require.ErrorIs(t, err, bmc.ErrPendingMismatch)
			assert.NotContains(t, err.Error(), secretPW)
			err = s.DropPending(ctx, "r", wrong)
			require.ErrorIs(t, err, bmc.ErrPendingMismatch)
			_, has, _ = s.Pending(ctx, "r")
			assert.True(t, has, "a mismatched drop keeps the pending set")

			require.NoError(t, s.Promote(ctx, "r", newCreds))
			cur, _ = s.Resolve(ctx, "r")
			assert.Equal(t, newCreds, cur)
			_, has, _ = s.Pending(ctx, "r")
			assert.False(t, has, "Promote drops the pending set")
			require.NoError(t, s.Promote(ctx, "r", newCreds), "Promote is idempotent")
			require.ErrorIs(t, s.Promote(ctx, "r", oldCreds), bmc.ErrPendingMismatch)

			require.NoError(t, s.DropPending(ctx, "r", oldCreds), "nothing pending: nil")
			require.NoError(t, s.SetPending(ctx, "r", oldCreds))
			require.NoError(t, s.DropPending(ctx, "r", oldCreds))
			_, has, _ = s.Pending(ctx, "r")
			assert.False(t, has)

			_, err = s.Resolve(ctx, "nope")
			assert.ErrorContains(t, err, `"nope"`)
			assert.Error(t, s.SetPending(ctx, "nope", newCreds))
			assert.Error(t, s.SetPending(ctx, "r", bmc.Credentials{Username: "admin"}), "an empty password is refused")
		})
	}
}

func TestFileCredentialsSurviveReopenAndAreNotWorldReadable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "creds.json")
	s, err := bmc.OpenFileCredentials(path)
	require.NoError(t, err)
	require.NoError(t, s.Set(ctx, "r", oldCreds))
	require.NoError(t, s.SetPending(ctx, "r", newCreds))

	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".creds.json.*"))
	assert.Empty(t, left, "no temporary file is left")

	again, err := bmc.OpenFileCredentials(path)
	require.NoError(t, err)
	p, has, err := again.Pending(ctx, "r")
	require.NoError(t, err)
	require.True(t, has)
	assert.Equal(t, newCreds, p)
	cur, err := again.Resolve(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, oldCreds, cur)
}

func TestFileCredentialsRefuseABadFileNamingTheField(t *testing.T) {
	for name, tc := range map[string]struct{ data, want string }{
		"not JSON":     {`{"credentials":`, "not JSON"},
		"wrong type":   {`{"credentials": {"r": {"current": {"username": 5, "password": "` + secretPW + `"}}}}`, `"credentials.current.username"`},
		"unknown":      {`{"credentials": {}, "extra": 1}`, `"extra"`},
		"no username":  {`{"credentials": {"r": {"current": {"password": "` + secretPW + `"}}}}`, `credentials."r".current.username is empty`},
		"half pending": {`{"credentials": {"r": {"current": {"username": "a", "password": "b"}, "pending": {"username": "a"}}}}`, `credentials."r".pending`},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "creds.json")
			require.NoError(t, os.WriteFile(path, []byte(tc.data), 0o600))
			_, err := bmc.OpenFileCredentials(path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), path)
			assert.NotContains(t, err.Error(), secretPW)
		})
	}
}

// TestPendingFallback: the pending set is tried only after the current
// one was refused as unauthorized, and only when there is one; once it
// worked it is tried first while it stays pending, so each dial costs no
// failed login.
func TestPendingFallback(t *testing.T) {
	ctx := context.Background()
	refused := fmt.Errorf("login: %w", bmc.ErrUnauthorized)
	var tried []string
	accepts := func(ok bmc.Credentials) func(bmc.Credentials) error {
		return func(c bmc.Credentials) error {
			tried = append(tried, strings.TrimSuffix(c.Password, "-"+secretPW))
			if c == ok {
				return nil
			}
			return refused
		}
	}
	store := bmc.NewMemoryCredentials(map[string]bmc.Credentials{"r": oldCreds})
	var f bmc.PendingFallback

	used, pending, err := f.Try(ctx, store, "r", oldCreds, accepts(oldCreds))
	require.NoError(t, err)
	assert.Equal(t, oldCreds, used)
	assert.False(t, pending)
	assert.Equal(t, []string{"old"}, tried)

	tried = nil
	_, _, err = f.Try(ctx, store, "r", oldCreds, accepts(newCreds))
	require.ErrorIs(t, err, bmc.ErrUnauthorized, "nothing pending: the refusal stands")
	assert.Equal(t, []string{"old"}, tried)

	require.NoError(t, store.SetPending(ctx, "r", newCreds))
	tried = nil
	used, pending, err = f.Try(ctx, store, "r", oldCreds, accepts(newCreds))
	require.NoError(t, err)
	assert.Equal(t, newCreds, used)
	assert.True(t, pending)
	assert.Equal(t, []string{"old", "new"}, tried)

	tried = nil
	_, pending, err = f.Try(ctx, store, "r", oldCreds, accepts(newCreds))
	require.NoError(t, err)
	assert.True(t, pending)
	assert.Equal(t, []string{"new"}, tried, "pending credentials that worked are tried first: no failed login")

	tried = nil
	_, pending, err = f.Try(ctx, store, "r", oldCreds, accepts(oldCreds))
	require.NoError(t, err)
	assert.False(t, pending)
	assert.Equal(t, []string{"new", "old"}, tried, "refused now: forgotten, the current ones tried once")

	tried = nil
	_, _, err = f.Try(ctx, store, "r", oldCreds, func(c bmc.Credentials) error {
		tried = append(tried, c.Username)
		return bmc.Transient(errors.New("connection refused"))
	})
	require.Error(t, err)
	assert.Len(t, tried, 1, "only a refusal of the credentials tries the pending set")

	tried = nil
	_, _, err = f.Try(ctx, store, "r", oldCreds, accepts(bmc.Credentials{}))
	require.ErrorIs(t, err, bmc.ErrUnauthorized, "both refused")
	assert.Equal(t, []string{"old", "new"}, tried)

	tried = nil
	_, pending, err = f.Try(ctx, bmc.StaticCredentials{"r": oldCreds}, "r", oldCreds, accepts(newCreds))
	require.ErrorIs(t, err, bmc.ErrUnauthorized)
	assert.False(t, pending)
	assert.Len(t, tried, 1, "a resolver that is not a CredentialsStore has nothing pending")
}
