//go:build race

package logfile

// raceEnabled: the race detector keeps shadow memory for what the test
// touches, which counts in the process's RSS.
const raceEnabled = true
