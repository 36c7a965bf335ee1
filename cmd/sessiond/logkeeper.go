package main

import "github.com/sessiond/sessiond/daemon/logkeep"

// isLogKeeperMode reports whether the daemon started this process as its
// log keeper: `sessiond logkeeper --socket PATH`, dispatched before the
// command tree is built, as the holder is. The daemon runs
// sessiond-logkeeper instead where it is installed.
func isLogKeeperMode(args []string) bool {
	return len(args) == 3 && args[0] == "logkeeper" && args[1] == "--socket"
}

// runLogKeeper runs the log keeper and returns its exit code.
func runLogKeeper(sock string) int { return logkeep.Main("sessiond logkeeper", sock) }
