package powergate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
)

type plain struct {
	wait time.Duration
	err  error
}

func (g plain) Admit(context.Context, string, string, int) (time.Duration, error) {
	return g.wait, g.err
}

type held struct {
	plain
	released *int
}

type sendKey struct{}

func (g held) AdmitHeld(ctx context.Context, _, _ string, _ int) (context.Context, func(context.Context), time.Duration, error) {
	return context.WithValue(ctx, sendKey{}, true), func(context.Context) { *g.released++ }, g.wait, g.err
}

func TestAdmit(t *testing.T) {
	ctx := t.Context()
	if send, release, err := Admit(ctx, nil, "s", "j", 0); err != nil || send != ctx {
		t.Fatalf("no gate: %v", err)
	} else {
		release(ctx)
	}
	var g *Gated
	if _, _, err := Admit(ctx, plain{wait: time.Second}, "s", "j", 0); !errors.As(err, &g) || g.Wait != time.Second {
		t.Errorf("held back: %v, want a *Gated of 1s", err)
	}
	if _, _, err := Admit(ctx, plain{err: errors.New("store down")}, "s", "j", 0); !bmc.IsTransient(err) {
		t.Errorf("a gate that cannot be asked: %v, want transient", err)
	}
	n := 0
	send, release, err := Admit(ctx, held{released: &n}, "s", "j", 0)
	if err != nil || send.Value(sendKey{}) != true {
		t.Fatalf("a held gate's send ctx is not used: %v", err)
	}
	release(ctx)
	if n != 1 {
		t.Errorf("release called %d times, want 1", n)
	}
}
