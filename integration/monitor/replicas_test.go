package monitor_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/internal/monitortest"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/sqlstore"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres/pgtest"
)

// Two replicas, each with its own PostgreSQL client on one schema, share
// the work (monitortest.Replicas; the monitor's own tests run the same
// check on memstore).
func TestReplicasPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	var stores [2]storage.Store
	for i := range stores {
		s, err := postgres.Open(context.Background(), dsn, postgres.Options{Store: sqlstore.Options{Schema: schema}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close(context.Background()) })
		stores[i] = s
	}
	monitortest.Replicas(t, stores)
}
