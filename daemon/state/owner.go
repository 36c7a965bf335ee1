package state

import (
	"errors"
	"sync/atomic"

	"github.com/sessiond/sessiond/daemon/identity"
)

// Owner is the identity that operations in a project run with: the
// session user's uid, primary gid and supplementary groups (identity.User).
type Owner = identity.User

// LookupOwner returns the Owner of the account uid as a login would set it
// up (identity.Lookup).
func LookupOwner(uid int) (*Owner, error) { return identity.Lookup(uid) }

// ErrNoSeparation is matched by errors.Is when an operation cannot take the
// owner's identity: on a platform without per-thread credentials, or in a
// daemon without the privilege to switch.
var ErrNoSeparation = errors.New("cannot act with another user's rights")

// threadSwitches counts the operations that ran on a thread of their own
// with another identity; tests read it to see that user mode spawns none.
var threadSwitches atomic.Int64

// runAs runs fn with o's filesystem identity and returns its error. When o
// does not switch (see switches) fn runs directly on the calling goroutine.
// Otherwise fn runs on a fresh goroutine locked to an OS thread whose
// credentials alone are changed (asOwner, per platform); a panic in fn is
// raised again in the caller after that thread is gone.
func runAs(o *Owner, fn func() error) error {
	if !o.Switches() {
		return fn()
	}
	if err := o.Validate(); err != nil {
		return err
	}
	threadSwitches.Add(1)
	return asOwner(o, fn)
}
