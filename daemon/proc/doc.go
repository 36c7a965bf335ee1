// Package proc spawns and tracks the processes of sessions: each session's
// command runs in a new process group, with its output written straight to a
// file it owns; one reaper collects exit statuses; the processes of a
// session are found by group, by descent and by the SESSIOND_SESSION_ID in
// their environment, so that a stop leaves nothing behind.
//
// The daemon is a child subreaper on Linux, so descendants that escape their
// session by double-forking come back to it when their parent dies. The
// reaper therefore reaps zombies it did not start, and helper commands the
// daemon runs itself (git, hooks) must go through Start/Wait/Run so that the
// reaper leaves their exit status to os/exec.
package proc
