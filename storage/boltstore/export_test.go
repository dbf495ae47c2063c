package boltstore

// SetPruning sets how often and how far behind the head superseded revs
// entries are pruned, for tests; restore puts the defaults back.
func SetPruning(every, lag int64, pass int) (restore func()) {
	e, l, p := pruneEvery, pruneLag, maxPrunePass
	pruneEvery, pruneLag, maxPrunePass = every, lag, pass
	return func() { pruneEvery, pruneLag, maxPrunePass = e, l, p }
}
