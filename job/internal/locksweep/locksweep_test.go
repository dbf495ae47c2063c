package locksweep

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/clock"
	"github.com/bmckit/bmckit/storage/memstore"
	"github.com/bmckit/bmckit/syslock"
)

// A sweep deletes the locks of this Owner and namespace whose holder has
// completed, and none of another Owner, of another namespace, of an
// unfinished job, or of a system the Runner holds.
func TestSweep(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	clk := clock.NewFake(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	mine := syslock.NewTable(store, syslock.DefaultNamespace, clk)
	other := syslock.NewTable(store, "tenant-b/", clk)
	write := func(tab *syslock.Table, sys, holder, owner string) {
		_, err := tab.Write(ctx, sys, syslock.Record{Holder: holder, Owner: owner}, 0, 30*time.Second)
		require.NoError(t, err)
	}
	write(mine, "s1", "done1", "me")
	write(mine, "s2", "running", "me")
	write(mine, "s3", "done3", "someone-else")
	write(other, "s4", "done4", "me")
	write(mine, "s5", "done5", "me")
	write(mine, "s 6", "done6", "me")
	s := New(Config{Store: store, Locks: mine, Owner: "me", Lease: 30 * time.Second, Clock: clk, Log: logr.Discard(),
		Unfinished: func(_ context.Context, job string) (bool, error) { return job == "running", nil }})
	s.Hold("s5")
	s.Hold("s 6")
	s.Drop("s 6")

	assert.Equal(t, 2, s.Sweep(ctx))
	for sys, kept := range map[string]bool{"s1": false, "s2": true, "s3": true, "s4": true, "s5": true, "s 6": false} {
		_, rev, err := mine.Read(ctx, sys)
		require.NoError(t, err)
		assert.Equal(t, kept, rev != 0, "lock of %s kept", sys)
	}
	assert.Equal(t, 0, s.Sweep(ctx), "nothing more")
}
