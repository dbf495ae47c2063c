package boltstore

import (
	bolt "go.etcd.io/bbolt"

	"github.com/bmckit/bmckit/storage/groupcommit"
)

// writeFn is one write's work inside a transaction. It returns reject when
// the write is refused and changed nothing (ErrConflict, a cancelled ctx),
// or fatal for a bbolt error after which the transaction must not commit;
// never both.
type writeFn func(tx *bolt.Tx) (reject, fatal error)

// commitBatch runs a batch of writes in one bbolt transaction (one fsync).
// If that transaction fails, each write runs alone so that each gets its own
// outcome (what bbolt's DB.Batch does too).
func commitBatch(db *bolt.DB) func(batch []*groupcommit.Op[writeFn]) {
	return func(batch []*groupcommit.Op[writeFn]) {
		err := db.Update(func(tx *bolt.Tx) error {
			for _, o := range batch {
				reject, fatal := o.Fn(tx)
				if fatal != nil {
					return fatal
				}
				o.Err = reject
			}
			return nil
		})
		if err == nil {
			return
		}
		for _, o := range batch {
			o.Err = db.Update(func(tx *bolt.Tx) error {
				reject, fatal := o.Fn(tx)
				if fatal != nil {
					return fatal
				}
				return reject // a reject changed nothing
			})
		}
	}
}
