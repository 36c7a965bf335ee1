package state

// RunAs runs fn with o's filesystem identity, as every file operation of a
// Project does: with a nil owner (or the daemon's own user) directly, else
// on an OS thread of its own whose fsuid, fsgid and groups are o's, so that
// the kernel checks o's permissions and what fn creates is o's. fn must not
// start goroutines that touch files: they would run with the daemon's
// rights. It is for work in a user's files that is not a Project's, such
// as copying files into a new git worktree.
func RunAs(o *Owner, fn func() error) error { return runAs(o, fn) }
