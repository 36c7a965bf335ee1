// Package state owns every file sessiond writes about a session: the
// project's session state (session_state.json), the handoff (handoff.json),
// the progress log, the context handed to the next session (context.md), the
// warning file, the project lock (session.lock), and the reading of the
// user's feature list (feature_list.json). All of them live under a
// project's .sessiond directory (kept out of git through .git/info/exclude),
// are written atomically (temporary file in the same directory, fsync,
// rename, fsync of the directory) with owner-only permissions, and are read
// defensively: a missing file means "no state", and an empty, truncated or
// otherwise corrupt one is moved aside as NAME.corrupt-<time> and reported
// as a *CorruptError, never a crash.
//
// It is also the Go API for programs that want to save, load and clear a
// project's session state themselves (SaveSessionState, LoadSessionState,
// ClearSessionState). The package imports only the standard library.
package state
