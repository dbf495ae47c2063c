//go:build !race

package bmctest_test

// raceEnabled: the race detector is off.
const raceEnabled = false
