package bmc_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
)

type namedDriver struct{ name string }

func (d *namedDriver) PowerState(context.Context) (bmc.PowerState, error) { return bmc.PowerOn, nil }
func (d *namedDriver) SetPower(context.Context, bmc.PowerAction) error    { return nil }
func (d *namedDriver) Close(context.Context) error                        { return nil }

var _ bmc.Driver = (*namedDriver)(nil)

func TestSchemeDialerRoutesByProtocol(t *testing.T) {
	type call struct {
		ep    bmc.Endpoint
		creds bmc.Credentials
	}
	var calls []call
	dialer := func(name string) bmc.Dialer {
		return bmc.DialerFunc(func(ctx context.Context, ep bmc.Endpoint, creds bmc.Credentials) (bmc.Driver, error) {
			calls = append(calls, call{ep, creds})
			return &namedDriver{name}, nil
		})
	}
	var sd bmc.SchemeDialer
	sd.Register("Redfish", dialer("redfish")) // registration is case-insensitive
	sd.Register("ipmi", dialer("ipmi"))
	creds := bmc.Credentials{Username: "u", Password: "p"}

	for in, want := range map[string]string{
		"redfish://h":       "redfish",
		"redfish+http://h":  "redfish",
		"redfish+https://h": "redfish",
		"ipmi://h":          "ipmi",
	} {
		ep, err := bmc.ParseEndpoint(in)
		require.NoError(t, err)
		calls = nil
		d, err := sd.Dial(context.Background(), ep, creds)
		require.NoError(t, err, in)
		assert.Equal(t, want, d.(*namedDriver).name, in)
		require.Len(t, calls, 1)
		assert.Equal(t, ep, calls[0].ep, "endpoint passed through unchanged")
		assert.Equal(t, creds, calls[0].creds)
	}

	// A later Register replaces the dialer.
	sd.Register("ipmi", dialer("ipmi2"))
	d, err := sd.Dial(context.Background(), bmc.Endpoint{Protocol: "ipmi", Host: "h"}, creds)
	require.NoError(t, err)
	assert.Equal(t, "ipmi2", d.(*namedDriver).name)
}

func TestSchemeDialerUnknownProtocol(t *testing.T) {
	var sd bmc.SchemeDialer
	sd.Register("redfish", bmc.DialerFunc(func(context.Context, bmc.Endpoint, bmc.Credentials) (bmc.Driver, error) {
		t.Fatal("wrong dialer called")
		return nil, nil
	}))
	sd.Register("ipmi", bmc.DialerFunc(func(context.Context, bmc.Endpoint, bmc.Credentials) (bmc.Driver, error) {
		t.Fatal("wrong dialer called")
		return nil, nil
	}))
	d, err := sd.Dial(context.Background(), bmc.Endpoint{Protocol: "amt", Host: "10.0.0.9", Port: 16992}, bmc.Credentials{Username: "u", Password: "hunter2"})
	require.Error(t, err)
	assert.Nil(t, d)
	assert.ErrorIs(t, err, bmc.ErrNotSupported)
	var oe *bmc.OpError
	require.True(t, errors.As(err, &oe))
	assert.Equal(t, "dial", oe.Op)
	assert.Contains(t, err.Error(), `protocol "amt"`)
	assert.Contains(t, err.Error(), "registered: ipmi, redfish")
	assert.Contains(t, err.Error(), "10.0.0.9:16992")
	assert.NotContains(t, err.Error(), "hunter2")
	assert.False(t, bmc.IsTransient(err))

	// The zero value has nothing registered.
	var empty bmc.SchemeDialer
	_, err = empty.Dial(context.Background(), bmc.Endpoint{Protocol: "redfish", Host: "h"}, bmc.Credentials{})
	assert.ErrorIs(t, err, bmc.ErrNotSupported)
	assert.Contains(t, err.Error(), "registered: )")
}
