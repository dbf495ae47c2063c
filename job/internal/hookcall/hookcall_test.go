package hookcall

import (
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// A hook that panics is logged and its event dropped; the caller goes on.
func TestEmitRecoversAPanic(t *testing.T) {
	var logged []string
	log := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	got := 0
	Emit(log, func(n int) { got = n }, 7)
	Emit(log, func(int) { panic("observer bug") }, 8)
	Emit[int](log, nil, 9)
	if got != 7 {
		t.Errorf("the hook got %d, want 7", got)
	}
	if len(logged) != 1 {
		t.Errorf("logged %q, want the panic once", logged)
	}
	if Wrap[int](logr.Discard(), nil) != nil {
		t.Errorf("Wrap(nil) is not nil")
	}
	Wrap(log, func(int) { panic("again") })(1)
	if len(logged) != 2 {
		t.Errorf("a wrapped hook's panic is not recovered and logged")
	}
}
