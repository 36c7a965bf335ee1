// Package attach is the client side of attaching to a terminal session: it
// joins the user's terminal to a terminal stream (package ipc's frames,
// from the daemon or straight from a holder) the way ssh or tmux attach
// would. The terminal goes into raw mode, its window size is sent at the
// start and on every SIGWINCH, keystrokes are forwarded, and a detach key
// (ctrl-] unless told otherwise) ends the attach while the session goes on.
// Every way out restores the terminal.
package attach
