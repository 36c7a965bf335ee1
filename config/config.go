package config

import "fmt"

// On-shutdown policies.
const (
	ShutdownStop  = "stop"
	ShutdownLeave = "leave"
)

// Config is the daemon configuration.
type Config struct {
	Socket      string `toml:"socket" json:"socket"`
	StateDir    string `toml:"state_dir" json:"state_dir"`
	LogLevel    string `toml:"log_level" json:"log_level"`
	LogFormat   string `toml:"log_format" json:"log_format"`
	MaxSessions int    `toml:"max_sessions" json:"max_sessions"`
	// MaxSessionsPerUser bounds one user's live sessions,
	// MaxStartsPerMinutePerUser the sessions one user starts in a minute,
	// MaxBatch the entries of one batch start: each 0 for no bound, none
	// of them for root.
	MaxSessionsPerUser        int    `toml:"max_sessions_per_user" json:"max_sessions_per_user"`
	MaxStartsPerMinutePerUser int    `toml:"max_starts_per_minute_per_user" json:"max_starts_per_minute_per_user"`
	MaxBatch                  int    `toml:"max_batch" json:"max_batch"`
	HistoryLimit              int    `toml:"history_limit" json:"history_limit"`
	OnShutdown                string `toml:"on_shutdown" json:"on_shutdown"`
	// Cgroups contains each session in a cgroup of its own where the host
	// allows it (nil: true).
	Cgroups       *bool    `toml:"cgroups" json:"cgroups,omitempty"`
	AllowedGroups []string `toml:"allowed_groups" json:"allowed_groups"`
	LogMaxSize    Size     `toml:"log_max_size" json:"log_max_size"`
	LogKeep       int      `toml:"log_keep" json:"log_keep"`
	// LogKeeper carries plain sessions' output into their logs through
	// the log keeper process, which holds each log to its cap whatever
	// its writers do (nil: true); false gives the child the log itself.
	LogKeeper *bool `toml:"log_keeper" json:"log_keeper,omitempty"`
	// MaxConnections bounds the API connections open at once, in total and
	// per user other than root and the daemon's own (0: the default).
	MaxConnections        int `toml:"max_connections" json:"max_connections"`
	MaxConnectionsPerUser int `toml:"max_connections_per_user" json:"max_connections_per_user"`
	// CheckpointKeep and CheckpointMaxAge bound each session's checkpoint
	// history: older checkpoints are folded into the ones kept (their ids
	// still resolve); the newest checkpoint of a session is always kept.
	// Zero is the built-in default (100 checkpoints, 30 days).
	CheckpointKeep   int      `toml:"checkpoint_keep" json:"checkpoint_keep"`
	CheckpointMaxAge Duration `toml:"checkpoint_max_age" json:"checkpoint_max_age"`
	// CheckpointFullEvery and CheckpointFullAfter bound the incremental
	// checkpoints (those that read only what the watcher saw change): a
	// full scan of the work tree at least every CheckpointFullEvery
	// checkpoints and CheckpointFullAfter after the last one. Zero is the
	// built-in default (100 checkpoints, 1 hour).
	CheckpointFullEvery int      `toml:"checkpoint_full_every" json:"checkpoint_full_every"`
	CheckpointFullAfter Duration `toml:"checkpoint_full_after" json:"checkpoint_full_after"`
	// Metrics serves GET /v1/metrics (Prometheus text format) on the
	// socket; MetricsListen, a TCP host:port, serves it there too.
	Metrics       bool   `toml:"metrics" json:"metrics"`
	MetricsListen string `toml:"metrics_listen" json:"metrics_listen"`
	Defaults      Spec   `toml:"defaults" json:"defaults"`
	// Notify are the daemon's [[notify]] rules, for every session.
	Notify []NotifyRule `toml:"notify" json:"notify,omitempty"`
	// NotifyAllowHosts are the destinations a project's webhook may reach
	// under a root daemon although they are loopback, link-local or one of
	// the daemon's own listeners: host names, IP addresses or CIDR
	// prefixes, each optionally with :PORT.
	NotifyAllowHosts []string `toml:"notify_allow_hosts" json:"notify_allow_hosts,omitempty"`
	// Pools are the [pool.NAME] tables: named pools, and the bounds of
	// agents' accounts, by the account's name.
	Pools map[string]Pool `toml:"pool" json:"pools,omitempty"`
	// Web is the opt-in network listener ([web]).
	Web Web `toml:"web" json:"web,omitzero"`
}

// FieldError is a value that fails validation, named by its dotted key, so
// that a caller holding the source can point at its line.
type FieldError struct {
	Key string
	Msg string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Key, e.Msg) }

// LogKeeperOn reports whether plain sessions write through the log keeper.
func (c *Config) LogKeeperOn() bool { return c.LogKeeper == nil || *c.LogKeeper }

// CgroupsOn reports whether sessions are to be contained in cgroups.
func (c *Config) CgroupsOn() bool { return c.Cgroups == nil || *c.Cgroups }

// Validate reports the first thing wrong with c as a *FieldError naming
// the key. Schedules
// are checked by package configfile, which holds the cron parser.
func (c *Config) Validate() error {
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return &FieldError{"log_level", fmt.Sprintf("%q is not one of debug, info, warn, error", c.LogLevel)}
	}
	switch c.LogFormat {
	case "", "console", "json":
	default:
		return &FieldError{"log_format", fmt.Sprintf("%q is not one of console, json", c.LogFormat)}
	}
	if c.MaxSessions < 0 {
		return &FieldError{"max_sessions", "must not be negative"}
	}
	if c.MaxSessionsPerUser < 0 {
		return &FieldError{"max_sessions_per_user", "must not be negative"}
	}
	if c.MaxStartsPerMinutePerUser < 0 {
		return &FieldError{"max_starts_per_minute_per_user", "must not be negative"}
	}
	if c.MaxBatch < 0 {
		return &FieldError{"max_batch", "must not be negative"}
	}
	if c.HistoryLimit < 0 {
		return &FieldError{"history_limit", "must not be negative"}
	}
	switch c.OnShutdown {
	case ShutdownStop, ShutdownLeave:
	default:
		return &FieldError{"on_shutdown", fmt.Sprintf("%q is not one of stop, leave", c.OnShutdown)}
	}
	if c.LogMaxSize < 0 {
		return &FieldError{"log_max_size", "must not be negative"}
	}
	if c.LogKeep < 1 {
		return &FieldError{"log_keep", fmt.Sprintf("must be at least 1 (the log itself), got %d", c.LogKeep)}
	}
	if c.CheckpointKeep < 0 {
		return &FieldError{"checkpoint_keep", "must not be negative"}
	}
	if c.CheckpointMaxAge.Duration < 0 {
		return &FieldError{"checkpoint_max_age", "must not be negative"}
	}
	if c.CheckpointFullEvery < 0 {
		return &FieldError{"checkpoint_full_every", "must not be negative"}
	}
	if c.CheckpointFullAfter.Duration < 0 {
		return &FieldError{"checkpoint_full_after", "must not be negative"}
	}
	if c.MaxConnections < 0 || c.MaxConnectionsPerUser < 0 {
		return &FieldError{"max_connections", "must not be negative"}
	}
	if err := c.validateMetrics(); err != nil {
		return err
	}
	for i, h := range c.NotifyAllowHosts {
		if _, err := ParseHostPattern(h); err != nil {
			return &FieldError{"notify_allow_hosts", fmt.Sprintf("entry %d: %v", i+1, err)}
		}
	}
	if err := c.validatePools(); err != nil {
		return err
	}
	if err := c.validateWeb(); err != nil {
		return err
	}
	if err := c.Defaults.Validate(); err != nil {
		fe := err.(*FieldError)
		return &FieldError{"defaults." + fe.Key, fe.Msg}
	}
	return nil
}

// Project is a project's sessiond.toml.
type Project struct {
	Session  Spec      `toml:"session"`
	Watch    *Watch    `toml:"watch"`
	Services []Service `toml:"service"`
	// Notify are the project's [[notify]] rules, for its sessions.
	Notify []NotifyRule `toml:"notify"`
}

// ProjectFile is the name of a project's spec file.
const ProjectFile = "sessiond.toml"
