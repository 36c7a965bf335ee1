package state

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"sync/atomic"
	"syscall"
)

// Owner is the filesystem identity that operations in a project run with:
// the session user's uid, primary gid and supplementary groups.
type Owner struct {
	UID, GID int
	// Groups are the supplementary groups. They replace the daemon's, so an
	// empty list means none (root's own groups never carry over).
	Groups []int
}

// LookupOwner returns the Owner of the account uid as a login would set it
// up: its primary group, and every group it is a member of as its
// supplementary groups. An unknown uid is an error: guessing a gid would
// hand files to a group nobody chose.
func LookupOwner(uid int) (*Owner, error) {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return nil, fmt.Errorf("look up uid %d: %w", uid, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, fmt.Errorf("look up uid %d: primary group %q is not a number", uid, u.Gid)
	}
	o := &Owner{UID: uid, GID: gid}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("look up the groups of uid %d: %w", uid, err)
	}
	for _, id := range ids {
		if g, err := strconv.Atoi(id); err == nil {
			o.Groups = append(o.Groups, g)
		}
	}
	return o, o.validate()
}

// Credential returns o as the credential that starts a process with the
// owner's identity (git, hooks, preflight, the session's command), so that
// processes and file operations use the same ids.
func (o *Owner) Credential() *syscall.Credential {
	c := &syscall.Credential{Uid: uint32(o.UID), Gid: uint32(o.GID)}
	for _, g := range o.Groups {
		c.Groups = append(c.Groups, uint32(g))
	}
	return c
}

// ErrNoSeparation is matched by errors.Is when an operation cannot take the
// owner's identity: on a platform without per-thread credentials, or in a
// daemon without the privilege to switch.
var ErrNoSeparation = errors.New("cannot act with another user's rights")

// maxGroups is the kernel's NGROUPS_MAX.
const maxGroups = 65536

// validate checks that the ids fit the kernel's 32-bit ids; -1 (0xffffffff)
// means "no change" to the kernel and must never be passed on.
func (o *Owner) validate() error {
	if o == nil {
		return nil
	}
	ok := func(id int) bool { return id >= 0 && int64(id) < 1<<32-1 }
	if !ok(o.UID) || !ok(o.GID) {
		return fmt.Errorf("owner uid %d, gid %d: ids must be between 0 and 4294967294", o.UID, o.GID)
	}
	if len(o.Groups) > maxGroups {
		return fmt.Errorf("owner uid %d: %d supplementary groups, more than the kernel's %d", o.UID, len(o.Groups), maxGroups)
	}
	for _, g := range o.Groups {
		if !ok(g) {
			return fmt.Errorf("owner uid %d: supplementary group %d out of range", o.UID, g)
		}
	}
	return nil
}

// switches reports whether acting as o needs another identity than the
// daemon's: a nil owner, or one with the daemon's effective uid, runs with
// the daemon's own rights and spawns no thread.
func (o *Owner) switches() bool { return o != nil && o.UID != os.Geteuid() }

// uid is the uid that messages name for o: its own, or the daemon's.
func (o *Owner) uid() int {
	if o == nil {
		return os.Geteuid()
	}
	return o.UID
}

// threadSwitches counts the operations that ran on a thread of their own
// with another identity; tests read it to see that user mode spawns none.
var threadSwitches atomic.Int64

// runAs runs fn with o's filesystem identity and returns its error. When o
// does not switch (see switches) fn runs directly on the calling goroutine.
// Otherwise fn runs on a fresh goroutine locked to an OS thread whose
// credentials alone are changed (asOwner, per platform); a panic in fn is
// raised again in the caller after that thread is gone.
func runAs(o *Owner, fn func() error) error {
	if !o.switches() {
		return fn()
	}
	if err := o.validate(); err != nil {
		return err
	}
	threadSwitches.Add(1)
	return asOwner(o, fn)
}
