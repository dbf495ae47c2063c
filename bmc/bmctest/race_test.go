//go:build race

package bmctest_test

// raceEnabled: the race detector is on, so a data race fails a test.
const raceEnabled = true
