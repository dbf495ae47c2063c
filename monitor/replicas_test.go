package monitor_test

import (
	"testing"

	"github.com/bmckit/bmckit/internal/monitortest"
	"github.com/bmckit/bmckit/storage"
	"github.com/bmckit/bmckit/storage/memstore"
)

// Two replicas on one memstore share the work (monitortest.Replicas); the
// integration module runs the same check on PostgreSQL.
func TestReplicasMemstore(t *testing.T) {
	s := memstore.New()
	monitortest.Replicas(t, [2]storage.Store{s, s})
}
