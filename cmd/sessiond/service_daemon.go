package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/sessiond/sessiond/ipc"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/config/configfile"
)

// serviceRuntime is where the installed service keeps its files, as far
// as its command line and its config file say.
type serviceRuntime struct {
	Config   string // the config file it reads ("" when its command line is unreadable)
	Socket   string
	StateDir string
	Problem  string // why the values above may be wrong, if they may
}

// runtimeOf works out the files of a daemon started with argv by the
// service manager: --config from argv, else the mode's default, then that
// file's socket and state_dir, else the mode's defaults. The manager does
// not pass on this shell's SESSIOND_* variables, so they do not count.
func runtimeOf(userMode bool, argv []string) serviceRuntime {
	// A user service run by root is a root daemon, with root's paths.
	system := !userMode || os.Geteuid() == 0
	var rt serviceRuntime
	for i, a := range argv {
		if a == "--config" && i+1 < len(argv) {
			rt.Config = argv[i+1]
		} else if v, ok := cutFlag(a, "--config"); ok {
			rt.Config = v
		}
	}
	if rt.Config == "" {
		rt.Config = filepath.Join(configHome(), "sessiond", "sessiond.toml")
		if system {
			rt.Config = config.SystemConfig
		}
	}
	cfg, _, err := configfile.Load(rt.Config)
	if err != nil {
		rt.Problem = err.Error()
		cfg = configfile.Default()
	}
	rt.StateDir, rt.Socket = cfg.StateDir, cfg.Socket
	if rt.StateDir == "" {
		rt.StateDir = filepath.Join(stateHome(), "sessiond")
		if system {
			rt.StateDir = config.SystemStateDir
		}
	}
	if rt.Socket == "" {
		switch {
		case system:
			rt.Socket = config.SystemSocket
		case os.Getenv("XDG_RUNTIME_DIR") != "":
			rt.Socket = filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "sessiond.sock")
		default:
			rt.Socket = filepath.Join(rt.StateDir, "sessiond.sock")
		}
	}
	return rt
}

func cutFlag(arg, name string) (string, bool) {
	if len(arg) > len(name)+1 && arg[:len(name)+1] == name+"=" {
		return arg[len(name)+1:], true
	}
	return "", false
}

func configHome() string { return xdgHome("XDG_CONFIG_HOME", ".config") }
func stateHome() string  { return xdgHome("XDG_STATE_HOME", filepath.Join(".local", "state")) }

func xdgHome(env, fallback string) string {
	if p := os.Getenv(env); filepath.IsAbs(p) {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = "/"
	}
	return filepath.Join(home, fallback)
}

// daemonVersion is what the daemon says of itself at GET /v1/version.
type daemonVersion struct {
	Version  string `json:"version"`
	PID      int    `json:"pid"`
	Socket   string `json:"socket"`
	StateDir string `json:"state_dir"`
	// Containment is what the daemon contains its sessions in.
	Containment *ipc.Containment `json:"containment"`
	// Warning is the daemon's Sessiond-Warning ("state dir full: 3 ends
	// pending"), "" for none.
	Warning string `json:"-"`
}

// askDaemon asks the daemon on socket for its version: a plain HTTP GET
// over the Unix socket, as curl would do it.
func askDaemon(ctx context.Context, socket string) (daemonVersion, error) {
	var v daemonVersion
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://sessiond/v1/version", nil)
	if err != nil {
		return v, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return v, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return v, err
	}
	if resp.StatusCode != http.StatusOK {
		return v, fmt.Errorf("GET /v1/version: %s", resp.Status)
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return v, fmt.Errorf("GET /v1/version: %w", err)
	}
	v.Warning = resp.Header.Get("Sessiond-Warning")
	return v, nil
}
