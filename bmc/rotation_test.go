package bmc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
)

func TestNextUserName(t *testing.T) {
	accts := []bmc.Account{{UserName: "ops-3"}, {UserName: "root-2"}}
	for name, want := range map[string]string{
		"admin": "admin-2", "admin-2": "admin-3", "admin-9": "admin-10",
		"ops-2": "ops-4", "root": "root-3", "a-b": "a-b-2",
		"x-99999999999999999999999": "x-99999999999999999999999-2", // no overflow: a plain suffix
	} {
		assert.Equal(t, want, bmc.NextUserName(name, accts), name)
	}
}

func TestAccepts(t *testing.T) {
	ctx := context.Background()
	b := fake.New(fake.Options{Username: "admin", Password: "Right-pw-93#k"})
	ok, err := bmc.Accepts(ctx, b, bmc.Endpoint{}, bmc.Credentials{Username: "admin", Password: "Right-pw-93#k"})
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = bmc.Accepts(ctx, b, bmc.Endpoint{}, bmc.Credentials{Username: "admin", Password: "wrong"})
	require.NoError(t, err, "a refusal is an answer")
	assert.False(t, ok)
	assert.Equal(t, 0, b.Sessions().Open, "sessions closed")
	assert.Len(t, b.CallsTo(fake.MethodAccounts), 1, "the accepted login read the accounts")

	nm := fake.New(fake.Options{Username: "admin", Password: "pw", Unsupported: []bmc.Capability{bmc.CapabilityAccounts}})
	_, err = bmc.Accepts(ctx, nm, bmc.Endpoint{}, bmc.Credentials{Username: "admin", Password: "pw"})
	assert.ErrorIs(t, err, bmc.ErrNotSupported)
}
