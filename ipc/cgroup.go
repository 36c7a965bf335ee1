package ipc

// Containment is what a daemon contains its sessions in, as
// /v1/version, sessiond status and sessiond doctor say it.
type Containment struct {
	// Mode is "delegated" (a subtree systemd delegates to the daemon's
	// unit), "scope" (a transient scope of the systemd manager),
	// "cgroupfs" (a writable cgroupfs, no systemd) or "none".
	Mode string `json:"mode"`
	// Path is the cgroup (v2) the sessions' cgroups are made in.
	Path string `json:"path,omitempty"`
	// Controllers say where each limit's controller is: "v2", "v1" (a
	// hybrid host's legacy hierarchy) or "" where none is to be had.
	Controllers map[string]string `json:"controllers,omitempty"`
	// Why says how the mode came about, or what is missing.
	Why string `json:"why,omitempty"`
	// Fix is what would give sessiond what is missing ("" for nothing).
	Fix string `json:"fix,omitempty"`
}

// Cgroup is where a session's processes are contained: its record keeps
// it, so that a daemon that adopts the session finds it again.
type Cgroup struct {
	// Path is the session's cgroup v2 directory.
	Path string `json:"path"`
	// V1 are its directories in v1 hierarchies, by controller.
	V1 map[string]string `json:"v1,omitempty"`
	// Killed counts the processes the command left in it that its end
	// killed; Empty says that nothing was left in it at the end (nothing
	// escaped).
	Killed int  `json:"killed,omitempty"`
	Empty  bool `json:"empty,omitempty"`
}

// Memory is what a contained session uses of memory, from its cgroup.
type Memory struct {
	CurrentBytes int64 `json:"current_bytes"`
	PeakBytes    int64 `json:"peak_bytes,omitempty"`
	// OOMKills counts the processes the kernel's OOM killer ended in it.
	OOMKills int64 `json:"oom_kills,omitempty"`
}
