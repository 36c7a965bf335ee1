// Package term runs the terminal of a tty session and lets the daemon talk
// to it.
//
// A session with a terminal has a holder: a small process (the sessiond
// binary in its hidden holder mode) that owns the pseudo-terminal's master
// side, like containerd's shim owns a container's stdio. The holder starts
// the session's command on the terminal, copies everything it writes into
// the session log (capped and rotated), keeps a screen emulator and a
// bounded scrollback, serves viewers on a Unix socket in the session's
// directory, and records the child's exit status in a file there before it
// exits. It runs in a session of its own, so a daemon that crashes, is
// killed or is upgraded leaves it running; the next daemon reconnects with
// Connect and learns the exit status from the file if the child ended in
// between.
//
// RunHolder is the holder itself. Start, Connect and the methods of Holder
// are the daemon's side. The stream between them is framed as package ipc
// describes (ipc.TermFrameType).
package term
