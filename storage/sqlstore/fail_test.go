package sqlstore

import (
	"context"
	"errors"
	"testing"

	"github.com/bmckit/bmckit/storage"
)

// A statement error seen after the caller's ctx ended says the outcome is
// unknown: the server may have committed it.
func TestFailAfterCtxEndedIsOutcomeUnknown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := fail(ctx, "update", "k", errors.New("conn closed"))
	if !errors.Is(err, storage.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
		t.Fatalf("want ErrOutcomeUnknown and context.Canceled, got %v", err)
	}
	if err := fail(context.Background(), "update", "k", errors.New("syntax")); errors.Is(err, storage.ErrOutcomeUnknown) {
		t.Fatalf("a statement error with a live ctx is not ambiguous: %v", err)
	}
}
