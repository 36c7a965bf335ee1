// Package e2e holds the end-to-end tests of sessiond: they build the real
// sessiond and sessionctl binaries once, start a daemon per test on a
// socket of its own, and drive it the way a user would — through
// sessionctl, curl on the Unix socket, and signals — with small shell
// scripts as the supervised sessions.
//
// The package has no non-test code. Run it with
//
//	go test -race -count=1 ./e2e/
//
// and rewrite its golden files in testdata/ with -update.
package e2e
