//go:build !race

package logfile

const raceEnabled = false
