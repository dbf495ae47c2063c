package connpool_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/connpool"
	"github.com/bmckit/bmckit/bmc/fake"
)

// Addresses of one system that differ in their options (ipmi://h?cipher=3)
// do not share a connection: a change of options dials again, as a change
// of credentials does.
func TestOptionsAreAConnectionVersion(t *testing.T) {
	ctx := context.Background()
	b := fake.New(fake.Options{})
	p := connpool.New(b, 0, nil)
	defer p.Close(ctx)
	plain, err := bmc.ParseEndpoint("ipmi://10.0.0.9")
	require.NoError(t, err)
	suite3, err := bmc.ParseEndpoint("ipmi://10.0.0.9?cipher=3")
	require.NoError(t, err)
	require.Equal(t, plain.SystemKey(), suite3.SystemKey(), "one system, one lock")

	d1, err := p.Get(ctx, plain, bmc.Credentials{})
	require.NoError(t, err)
	d2, err := p.Get(ctx, plain, bmc.Credentials{})
	require.NoError(t, err)
	assert.Same(t, d1, d2)
	d3, err := p.Get(ctx, suite3, bmc.Credentials{})
	require.NoError(t, err)
	assert.NotSame(t, d1, d3)
	s := b.Sessions()
	assert.Equal(t, 2, s.Logins)
	assert.Equal(t, 1, s.Open, "the connection with the old options was closed")
}

func TestCredentialsChangeAndIdle(t *testing.T) {
	b := fake.New(fake.Options{})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	p := connpool.New(b, time.Minute, func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	ep, err := bmc.ParseEndpoint("ipmi://10.2.0.1")
	require.NoError(t, err)
	ctx := context.Background()
	d1, err := p.Get(ctx, ep, bmc.Credentials{Username: "a", Password: "1"})
	require.NoError(t, err)
	d2, err := p.Get(ctx, ep, bmc.Credentials{Username: "a", Password: "1"})
	require.NoError(t, err)
	assert.Same(t, d1, d2)
	assert.Equal(t, 1, b.Sessions().Logins)
	_, err = p.Get(ctx, ep, bmc.Credentials{Username: "a", Password: "2"})
	require.NoError(t, err)
	assert.Equal(t, 2, b.Sessions().Logins, "changed credentials dial anew")
	assert.Equal(t, 1, b.Sessions().Open, "and close the old connection")
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	p.CloseIdle(ctx)
	assert.Equal(t, 0, b.Sessions().Open, "idle connection closed")
	assert.Equal(t, 0, p.Len())
}
