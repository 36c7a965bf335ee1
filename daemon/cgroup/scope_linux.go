package cgroup

import (
	"context"
	"fmt"
	"os"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
)

// reachSystemd reports whether the systemd manager answers on D-Bus.
func reachSystemd() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := connect(ctx)
	if err != nil {
		return err
	}
	conn.Close()
	return nil
}

// connect connects to the systemd manager of the daemon's user: the system
// one for root, the user's own otherwise.
func connect(ctx context.Context) (*sddbus.Conn, error) {
	var (
		conn *sddbus.Conn
		err  error
	)
	if os.Geteuid() == 0 {
		conn, err = sddbus.NewSystemConnectionContext(ctx)
	} else {
		conn, err = sddbus.NewUserConnectionContext(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("no D-Bus connection to systemd: %w", err)
	}
	return conn, nil
}

// startScope moves the daemon into a transient scope of the systemd
// manager it belongs to (the user manager for a user's daemon, the system
// manager for root's), delegated to it, and returns the scope's name.
func startScope(name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := connect(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	unit := fmt.Sprintf("%s-%d.scope", name, os.Getpid())
	props := []sddbus.Property{
		sddbus.PropDescription("sessiond's sessions"),
		sddbus.PropPids(uint32(os.Getpid())),
		{Name: "Delegate", Value: dbus.MakeVariant(true)},
		// The scope outlives the daemon while sessions run in it: a new
		// daemon adopts them.
		{Name: "CollectMode", Value: dbus.MakeVariant("inactive-or-failed")},
	}
	done := make(chan string, 1)
	if _, err := conn.StartTransientUnitContext(ctx, unit, "fail", props, done); err != nil {
		return "", fmt.Errorf("start %s: %w", unit, err)
	}
	select {
	case r := <-done:
		if r != "done" {
			return "", fmt.Errorf("start %s: %s", unit, r)
		}
	case <-ctx.Done():
		return "", fmt.Errorf("start %s: %w", unit, ctx.Err())
	}
	return unit, nil
}
