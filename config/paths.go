package config

import (
	"os"
	"path/filepath"
)

// Environment variables that override the default paths.
const (
	EnvConfig   = "SESSIOND_CONFIG"
	EnvStateDir = "SESSIOND_STATE_DIR"
	EnvSocket   = "SESSIOND_SOCKET"
)

// System-mode (root) default paths.
const (
	SystemConfig   = "/etc/sessiond/sessiond.toml"
	SystemStateDir = "/var/lib/sessiond"
	SystemSocket   = "/run/sessiond/sessiond.sock"
)

// SystemMode reports whether the daemon runs as root and so uses the
// system paths.
func SystemMode() bool { return os.Geteuid() == 0 }

// DefaultConfigPath returns $SESSIOND_CONFIG, else the mode's default.
func DefaultConfigPath() string {
	if p := os.Getenv(EnvConfig); p != "" {
		return p
	}
	if SystemMode() {
		return SystemConfig
	}
	return filepath.Join(xdg("XDG_CONFIG_HOME", ".config"), "sessiond", "sessiond.toml")
}

// DefaultStateDir returns $SESSIOND_STATE_DIR, else the mode's default.
func DefaultStateDir() string {
	if p := os.Getenv(EnvStateDir); p != "" {
		return p
	}
	if SystemMode() {
		return SystemStateDir
	}
	return filepath.Join(xdg("XDG_STATE_HOME", filepath.Join(".local", "state")), "sessiond")
}

// DefaultSocket returns $SESSIOND_SOCKET, else the mode's default for a
// daemon whose state dir is stateDir.
func DefaultSocket(stateDir string) string {
	if p := os.Getenv(EnvSocket); p != "" {
		return p
	}
	if SystemMode() {
		return SystemSocket
	}
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		return filepath.Join(rt, "sessiond.sock")
	}
	return filepath.Join(stateDir, "sessiond.sock")
}

// ClientSocket returns the socket a client should try when given none:
// $SESSIOND_SOCKET, else the user's default if it exists, else the system
// default.
func ClientSocket() string {
	if p := os.Getenv(EnvSocket); p != "" {
		return p
	}
	if os.Geteuid() != 0 {
		user := userSocket()
		if _, err := os.Stat(user); err == nil {
			return user
		}
		if _, err := os.Stat(SystemSocket); err == nil {
			return SystemSocket
		}
		return user
	}
	return SystemSocket
}

func userSocket() string {
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		return filepath.Join(rt, "sessiond.sock")
	}
	return filepath.Join(xdg("XDG_STATE_HOME", filepath.Join(".local", "state")), "sessiond", "sessiond.sock")
}

// Resolve fills the config's empty paths with the defaults, honouring the
// environment, and makes them absolute.
func (c *Config) Resolve() error {
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir()
	}
	if c.Socket == "" {
		c.Socket = DefaultSocket(c.StateDir)
	}
	var err error
	if c.StateDir, err = filepath.Abs(c.StateDir); err != nil {
		return err
	}
	c.Socket, err = filepath.Abs(c.Socket)
	return err
}

func xdg(env, fallback string) string {
	if p := os.Getenv(env); p != "" && filepath.IsAbs(p) {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = "/"
	}
	return filepath.Join(home, fallback)
}
