package postgres_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/job/jobtest"
	"github.com/bmckit/bmckit/storage/sqlstore"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres"
	"github.com/bmckit/bmckit/storage/sqlstore/postgres/pgtest"
)

// Three job.Runner replicas on one PostgreSQL store: every job exactly once,
// no interleaving on a system, submission order (jobtest.Replicas).
func TestJobReplicasPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	s, err := postgres.Open(context.Background(), dsn, postgres.Options{Store: sqlstore.Options{Schema: pgtest.Schema(t, dsn)}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	jobtest.Replicas(t, s)
}
