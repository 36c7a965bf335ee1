// Package state owns every file sessiond writes about a session: the
// project's session state (session_state.json), the handoff (handoff.json),
// the progress log, the context handed to the next session (context.md), the
// warning file, the project lock (session.lock), and the reading of the
// user's feature list (feature_list.json) and sessiond.toml. The files of a
// project live under its .sessiond directory (kept out of git through
// .git/info/exclude), are written atomically (temporary file in the same
// directory, fsync, rename, fsync of the directory, all through directory
// descriptors) with owner-only permissions, and are read defensively: a
// missing file means "no state", and an empty, truncated, oversized or
// otherwise corrupt one is moved aside as NAME.corrupt-<time> and reported
// as a *CorruptError, never a crash.
//
// # Whose rights
//
// On a build host the daemon runs as root and serves other users, and a
// project is a directory its user controls entirely: any path in it may be
// a symlink, a FIFO or a device, and may change between two system calls.
// So everything the daemon does in or about a user's project goes through a
// Project handle (OpenProject) made for that user, and runs with the user's
// filesystem identity: uid, primary gid and supplementary groups. The
// kernel then refuses whatever the user could not do themselves (root's
// files and directories, other users' private files), and every file
// created is the user's from the start, with no chown. The daemon's own
// state directory (session records, logs, the handoff archive) stays root's
// and is written with the path-based functions (WriteJSON, SaveHandoff,
// ...), which act with the caller's own rights.
//
// The identity is taken by one OS thread, not the process: the operation
// runs on a fresh goroutine that calls runtime.LockOSThread, sets the
// supplementary groups, the fsgid and the fsuid with the raw per-thread
// system calls (setgroups, setfsgid, setfsuid; syscall.Setgroups and
// syscall.Setuid would change every thread of the process), does its work,
// and exits without UnlockOSThread, so that the Go runtime ends the thread
// rather than reuse it. No goroutine can ever run with a credential another
// one set, even if the operation panics (the panic is raised again in the
// caller); the runtime never clones a thread from a locked one; and a
// goroutine that lands on the main thread, which cannot end, holds it idle
// while a second one takes another thread. The fs ids suffice: they are
// what the kernel checks for file access, and changing fsuid from 0 drops
// the thread's filesystem capabilities (CAP_DAC_OVERRIDE, CAP_FOWNER, ...),
// while the real and effective ids, which decide signals and the like,
// stay root's. This costs one thread per operation (about 0.1 ms), which is
// why it was chosen over a helper process per operation (a fork and exec,
// milliseconds, and a protocol to carry every call) and over doing the
// checks by hand as root with fchown (every check the kernel makes would
// have to be redone, and one missed is a root write). Git, hooks,
// preflight commands and sidecars are processes and get the user's
// credentials when they are started; they are not this package's.
//
// A nil Owner, or one with the daemon's own effective uid, means the
// daemon's own rights: a user daemon, or root's own project. Then nothing
// changes and no thread is spawned. Only Linux has per-thread filesystem
// credentials; elsewhere a daemon asked to act as another user refuses with
// an error matching ErrNoSeparation.
//
// # Confinement
//
// Project paths (the progress file, the feature list, sessiond.toml,
// .sessiond itself) resolve inside the project. They are opened relative
// to a descriptor of the project directory with openat2 and
// RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS, so that "..", an absolute path or
// a symlink that leaves the project fails in the kernel, race-free, and is
// reported as "refused: PATH leaves the project" (ErrOutsideProject).
// Symlinks that stay inside are followed. Where openat2 is missing (Linux
// before 5.6, some seccomp profiles, other systems) the same rule is kept
// by walking the path one component at a time with O_NOFOLLOW. .sessiond
// and sessiond's own files in it are never followed through a symlink, and
// .sessiond's mode is set through its descriptor, so swapping it for a
// symlink mid-operation changes nothing outside. CheckRelativePath is the
// lexical form of the rule, for validating config values.
//
// The repository's git directory is the exception: a linked worktree's or
// a submodule's lies outside the project by design. Its info/exclude is
// found by following the .git file and commondir as git does, and written
// with the user's rights through the same atomic write, so the kernel
// refuses a "gitdir:" pointing at a directory the user cannot write.
//
// # Inputs
//
// Every file read is opened with O_NONBLOCK and O_NOCTTY (a FIFO never
// blocks the daemon), must be a regular file once open (a FIFO, device,
// socket or directory gives an error matching ErrFileType that names the
// path and what it is), and is read up to a cap per kind of file (see
// MaxStateSize and the other limits); a larger file gives ErrTooLarge.
// Errors name paths and never quote a file's content.
//
// # Text
//
// Text from users (report fields, names, file names, log lines) has its
// control characters escaped where it is stored (StoreText, and every Bound
// method) and where it is shown: TerminalText and TerminalLine for a
// terminal, and the markdown writers (progress log, context.md) keep each
// field on one line, escaped, or inside a code block whose fence it cannot
// close, so that no field can forge the files' structure.
//
// The path-based functions (SaveSessionState, LoadSessionState,
// ClearSessionState, WriteLock, ...) remain the Go API for programs that
// save, load and clear a project's session state as themselves; they use a
// handle with the caller's own rights. The package imports only the
// standard library and golang.org/x/sys/unix.
package state
