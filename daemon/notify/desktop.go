package notify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/sessiond/sessiond/daemon/proc"
)

// defaultDesktopTimeout bounds a desktop notification.
const defaultDesktopTimeout = 10 * time.Second

// desktopSink shows a desktop notification: notify-send on Linux,
// osascript on macOS.
type desktopSink struct {
	timeout time.Duration
}

func (s *desktopSink) send(ctx context.Context, d *delivery) error {
	argv, err := desktopArgv(d.payload.Title, d.payload.Text, urgent(d.ev))
	if err != nil {
		return err
	}
	if err := checkOwner(d.rule.origin, d.ev.Owner); err != nil {
		return fmt.Errorf("desktop: %w", err)
	}
	cred := credential(d.ev.Owner)
	env := baseEnv(&d.ev, cred)
	if cred != nil {
		env = userBusEnv(env, cred.Uid)
	}
	p := process{argv: argv, dir: "/", env: env, cred: cred, timeout: s.timeout}
	if _, err := p.run(ctx); err != nil {
		return fmt.Errorf("desktop: %w%s", err, desktopHint(err))
	}
	return nil
}

// desktopArgv is the command that shows a notification on this system.
func desktopArgv(title, text string, isUrgent bool) ([]string, error) {
	// Neither program may take the text for an option.
	title, text = strings.TrimLeft(title, "-"), strings.TrimLeft(text, "-")
	if text == "" {
		text = title
	}
	switch runtime.GOOS {
	case "linux":
		urgency := "normal"
		if isUrgent {
			urgency = "critical"
		}
		return []string{"notify-send", "--app-name=sessiond", "--urgency=" + urgency, title, text}, nil
	case "darwin":
		// The text goes in as arguments of the script, never into its
		// source, so nothing in it can be run as AppleScript.
		return []string{"osascript", "-e", "on run argv", "-e",
			"display notification (item 2 of argv) with title (item 1 of argv)", "-e", "end run", title, text}, nil
	}
	return nil, fmt.Errorf("desktop: notifications need Linux (notify-send) or macOS (osascript), not %s", runtime.GOOS)
}

// desktopHint says what to install when the notifier program is missing.
func desktopHint(err error) string {
	if !errors.Is(err, proc.ErrNotFound) {
		return ""
	}
	if runtime.GOOS == "linux" {
		return " (install notify-send: libnotify-bin on Debian and Ubuntu, libnotify on Fedora and Arch)"
	}
	return ""
}

// userBusEnv points a process run as uid at that user's D-Bus session bus,
// where their desktop listens; a root daemon has no desktop of its own.
func userBusEnv(env []string, uid uint32) []string {
	dir := "/run/user/" + strconv.FormatUint(uint64(uid), 10)
	env = setEnv(env, "XDG_RUNTIME_DIR", dir)
	return setEnv(env, "DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(dir, "bus"))
}

// checkDesktop says whether a desktop notification can be shown by this
// daemon: the program is installed and, on Linux, a session bus is there.
func checkDesktop() error {
	argv, err := desktopArgv("", "", false)
	if err != nil {
		return err
	}
	if _, err := proc.LookPath(argv[0], "/", os.Environ()); err != nil {
		return fmt.Errorf("desktop: %w%s", err, desktopHint(err))
	}
	if runtime.GOOS != "linux" || os.Geteuid() == 0 {
		// A root daemon uses each session owner's bus, found at send time.
		return nil
	}
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") != "" {
		return nil
	}
	if dir := os.Getenv("XDG_RUNTIME_DIR"); dir != "" {
		if fi, err := os.Stat(filepath.Join(dir, "bus")); err == nil && fi.Mode().Type() == os.ModeSocket {
			return nil
		}
	}
	return errors.New("desktop: no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is unset and there is no $XDG_RUNTIME_DIR/bus): run the daemon as a user service in a desktop session")
}
