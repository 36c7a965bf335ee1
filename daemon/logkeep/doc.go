// Package logkeep is the log keeper: one process per daemon (per state
// dir) that carries the output of plain sessions from a pipe into their
// logs, so that a log stays within its cap however its writers write.
//
// # Why a process between the child and its log
//
// A child that writes its log through a descriptor of its own can put any
// number of bytes into it in one write(2): eight writers of 16 MiB blocks
// hold the log at many times its cap until the rotator catches up, and no
// rotator can stop a write already in the kernel. So a plain session's
// stdout and stderr are the write end of a pipe, and the keeper, which
// holds the read end, moves the bytes into output.log (O_APPEND) in reads
// bounded by the room left below the cap plus one chunk; when there is no
// room it waits for the rotation, and the child, its pipe full, waits too.
// The log is never more than the cap plus one chunk on disk.
//
// The keeper is a process of its own, in a session of its own, so that it
// outlives the daemon as the children do: a daemon restart (or a SIGKILL)
// never breaks a child's output. While a daemon is connected, the daemon's
// rotator (package logfile) rotates the logs, woken by the keeper's writes,
// and its readers keep their locks; while none is, the keeper rotates each
// log itself after its writes, with the same code and stamp file, and hands
// the rotation back when the next daemon says hello.
//
// # What survives what
//
// The daemon keeps a duplicate of every pipe's read end: when the keeper
// dies, no child sees EPIPE; its writes wait in the pipe while the daemon
// starts a new keeper and hands it the pipes again. A new daemon gets the
// duplicates back from the keeper in its hello. Only the death of both at
// once loses the pipes (the children then get SIGPIPE at their next write).
//
// The keeper opens nothing by path but the logs it rotates itself, in the
// daemon's own state dir; the pipes and the logs' descriptors come over its
// socket (state_dir/logkeeper.sock, mode 0600), which answers only its own
// user. It exits when no daemon is connected and it holds no pipe.
//
// # Protocol
//
// One SOCK_SEQPACKET connection per daemon; each request is one JSON
// message, with its descriptors (SCM_RIGHTS) when it has any, answered by
// one reply: hello (take over the rotation; the reply lists the pipes held,
// with duplicates of their read ends, in batches), add (path, cap, keep;
// the pipe's read end and the log's O_APPEND descriptor), drain (until what
// the pipe held when asked is in the log, or its writers are gone), and
// release (drain, then close the pipe and the log). Drains and releases go
// on side connections (no hello), several at once. release-all (paths) is
// release for the sessions that ended together, their drains at once: its
// replies name the paths released as their drains end, More while some are
// left. A keeper of an earlier sessiond answers it with an error, and the
// daemon then releases them one at a time.
package logkeep
