package config

import (
	"fmt"
	"strings"
	"time"
)

// On-limit policies: what a session does when its agent hits a usage
// limit (on_limit).
const (
	// OnLimitWait keeps the session until the limit resets, its deadline
	// paused, then continues it (the default).
	OnLimitWait = "wait"
	// OnLimitStop ends it with reason limit and a handoff that says when
	// it may go on.
	OnLimitStop = "stop"
	// OnLimitIgnore only records the limit and tells of it.
	OnLimitIgnore = "ignore"
)

// DefaultLimitJitter is limit_jitter left unset: the most a continuation
// after a reset waits beyond it, so that the sessions of one account do
// not all ask at the same second.
const DefaultLimitJitter = 15 * time.Second

// Queueing is how a session goes through usage limits, stalls, pools and
// host reboots.
type Queueing struct {
	// OnLimit is wait, stop or ignore ("" is wait).
	OnLimit string `toml:"on_limit" json:"on_limit,omitempty"`
	// LimitPausesDeadline false keeps the deadline where it is while the
	// session waits for a reset (nil: true).
	LimitPausesDeadline *bool `toml:"limit_pauses_deadline" json:"limit_pauses_deadline,omitempty"`
	// LimitJitter is the most a continuation waits beyond the reset; the
	// wait is drawn at random up to it (0: DefaultLimitJitter).
	LimitJitter Duration `toml:"limit_jitter" json:"limit_jitter,omitempty"`
	// StallTimeout makes a working agent that shows no progress for this
	// long stalled (0: off).
	StallTimeout Duration `toml:"stall_timeout" json:"stall_timeout,omitempty"`
	// ResumeAfterReboot starts a session the host's reboot ended again,
	// in its conversation, once the daemon is up.
	ResumeAfterReboot bool `toml:"resume_after_reboot" json:"resume_after_reboot,omitempty"`
	// Pool is the named pool the session counts in ("": its agent's
	// account); Priority orders the queue (higher first).
	Pool     string `toml:"pool" json:"pool,omitempty"`
	Priority int    `toml:"priority" json:"priority,omitempty"`
	// HardDeadline is a deadline a scheduler set (sessiond exec
	// --deadline-from-env): no wait moves it. Never read from a file.
	HardDeadline bool `toml:"-" json:"hard_deadline,omitempty"`
}

// LimitPolicy is on_limit, its default filled in.
func (q Queueing) LimitPolicy() string {
	if q.OnLimit == "" {
		return OnLimitWait
	}
	return q.OnLimit
}

// PausesDeadline reports whether a wait for a reset moves the deadline.
func (q Queueing) PausesDeadline() bool {
	return !q.HardDeadline && (q.LimitPausesDeadline == nil || *q.LimitPausesDeadline)
}

// Jitter is limit_jitter, its default filled in.
func (q Queueing) Jitter() time.Duration {
	if q.LimitJitter.Duration <= 0 {
		return DefaultLimitJitter
	}
	return q.LimitJitter.Duration
}

// Validate reports the first thing wrong with q as a *FieldError.
func (q Queueing) Validate() error {
	switch q.OnLimit {
	case "", OnLimitWait, OnLimitStop, OnLimitIgnore:
	default:
		return &FieldError{"on_limit", fmt.Sprintf("%q is not one of wait, stop, ignore", q.OnLimit)}
	}
	if q.LimitJitter.Duration < 0 || q.LimitJitter.Duration > time.Hour {
		return &FieldError{"limit_jitter", fmt.Sprintf("must be between 0 and 1h, got %s", q.LimitJitter)}
	}
	if q.StallTimeout.Duration < 0 {
		return &FieldError{"stall_timeout", fmt.Sprintf("must not be negative, got %s", q.StallTimeout)}
	}
	if q.StallTimeout.Duration > 0 && q.StallTimeout.Duration < time.Second {
		return &FieldError{"stall_timeout", fmt.Sprintf("%s is too short to tell a stall from a pause; give at least 1s (e.g. 10m)", q.StallTimeout)}
	}
	if err := CheckPoolName(q.Pool); err != nil {
		return &FieldError{"pool", err.Error()}
	}
	if strings.Contains(q.Pool, ":") {
		return &FieldError{"pool", fmt.Sprintf("%q: a name with \":\" is an agent's account, which sessiond finds from the agent's environment; name a pool of your own without one", q.Pool)}
	}
	if q.Priority < -1000 || q.Priority > 1000 {
		return &FieldError{"priority", fmt.Sprintf("must be between -1000 and 1000, got %d", q.Priority)}
	}
	return nil
}

// Pool is a [pool.NAME] table of the daemon's config: a bound on the
// sessions of one pool (a named one, or an agent's account) that run at
// once, and the least time between two of its starts.
type Pool struct {
	MaxRunning int      `toml:"max_running" json:"max_running,omitempty"`
	Stagger    Duration `toml:"stagger" json:"stagger,omitempty"`
}

// CheckPoolName checks the name of a pool: what an account's name may
// hold (letters, digits, and -_.:/@+~), at most 200 bytes; "" is none.
func CheckPoolName(name string) error {
	if len(name) > 200 {
		return fmt.Errorf("%d bytes is too long for a pool's name (at most 200)", len(name))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/@+~", r)) {
			return fmt.Errorf("%q: a pool's name holds letters, digits and -_.:/@+~ only", name)
		}
	}
	return nil
}

// validatePools checks the [pool.NAME] tables.
func (c *Config) validatePools() error {
	for name, p := range c.Pools {
		if name == "" {
			return &FieldError{"pool", "a pool needs a name"}
		}
		if err := CheckPoolName(name); err != nil {
			return &FieldError{"pool." + name, err.Error()}
		}
		if p.MaxRunning < 0 {
			return &FieldError{"pool." + name + ".max_running", fmt.Sprintf("must not be negative, got %d", p.MaxRunning)}
		}
		if p.Stagger.Duration < 0 || p.Stagger.Duration > 24*time.Hour {
			return &FieldError{"pool." + name + ".stagger", fmt.Sprintf("must be between 0 and 24h, got %s", p.Stagger)}
		}
	}
	return nil
}
