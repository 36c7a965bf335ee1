// Package format declares the types of sessiond's file formats, once:
// handoff.json (Handoff, with the agent's facts and the worktree's
// hand-back), session_state.json (SessionState), the task ids of a feature
// list, and a checkpoint as listed and as taken. Package ipc serves them
// and package daemon/state reads and writes them, both through these
// types, so that a field added here is a field of every view. The package
// holds no logic beyond the JSON forms of its types, and imports only the
// standard library, so that sessionctl stays thin.
package format
