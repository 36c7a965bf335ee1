//go:build !linux

package state

// forceWalk is what the tests set to cover the walk; without openat2 there
// is nothing else.
var forceWalk bool
