//go:build !race

package reads_test

const raceEnabled = false
