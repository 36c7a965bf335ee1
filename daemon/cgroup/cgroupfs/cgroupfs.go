package cgroupfs

// Leaves of a session's cgroup: its command (with its preflight and
// setup commands) and its sidecars, apart so that the command's end can
// kill what the command left while the sidecars still stop gracefully.
const (
	LeafCommand  = "cmd"
	LeafSidecars = "svc"
)

// Controllers are the controllers session limits use.
var Controllers = []string{"memory", "pids", "cpu"}
