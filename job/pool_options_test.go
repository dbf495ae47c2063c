package job_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/fake"
	"github.com/bmckit/bmckit/job"
)

// Addresses of one system that differ in their options (ipmi://h?cipher=3)
// do not share a connection: a change of options dials again, as a change
// of credentials does.
func TestConnPoolOptionsAreAConnectionVersion(t *testing.T) {
	ctx := context.Background()
	b := fake.New(fake.Options{})
	p := job.NewConnPool(b, 0, nil)
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
