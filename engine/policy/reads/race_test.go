//go:build race

package reads_test

// raceEnabled: the race detector allocates on its own, so allocation counts mean nothing.
const raceEnabled = true
