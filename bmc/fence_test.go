package bmc_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bmckit/bmckit/bmc"
)

type fenceFunc func() error

func (f fenceFunc) Admit() error { return f() }

type hookFunc func() error

func (h hookFunc) Sending() error { return h() }

// Admit asks the Fence first; the SendHook is told only about requests the
// Fence lets go, and its error stops the request too.
func TestAdmitFenceThenSendHook(t *testing.T) {
	assert.NoError(t, bmc.Admit(context.Background()))
	var sent int
	var hookErr error
	ctx := bmc.WithSendHook(context.Background(), hookFunc(func() error { sent++; return hookErr }))
	assert.NoError(t, bmc.Admit(ctx))
	assert.Equal(t, 1, sent)

	fenced := false
	ctx = bmc.WithFence(ctx, fenceFunc(func() error {
		if fenced {
			return fmt.Errorf("lapsed: %w", bmc.ErrFenced)
		}
		return nil
	}))
	assert.NoError(t, bmc.Admit(ctx))
	assert.Equal(t, 2, sent)
	fenced = true
	assert.ErrorIs(t, bmc.Admit(ctx), bmc.ErrFenced)
	assert.Equal(t, 2, sent, "a fenced request is not shown to the hook")

	fenced = false
	hookErr = errors.New("slot expired")
	assert.ErrorIs(t, bmc.Admit(ctx), hookErr)

	// A hook already in ctx is replaced; one that wraps it calls it.
	assert.NotNil(t, bmc.SendHookFrom(ctx))
	assert.Nil(t, bmc.SendHookFrom(context.Background()))
	inner := bmc.SendHookFrom(ctx)
	ctx = bmc.WithSendHook(ctx, hookFunc(func() error { return nil }))
	assert.NoError(t, bmc.Admit(ctx))
	ctx = bmc.WithSendHook(ctx, hookFunc(inner.Sending))
	assert.ErrorIs(t, bmc.Admit(ctx), hookErr)
}
