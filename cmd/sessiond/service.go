package main

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"runtime"

	"github.com/kardianos/service"
	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/packaging"
)

// controlOnly satisfies service.Interface for install and control: the
// service manager runs `sessiond run` itself.
type controlOnly struct{}

func (controlOnly) Start(service.Service) error { return nil }
func (controlOnly) Stop(service.Service) error  { return nil }

// serviceConfig describes the sessiond service for kardianos/service, with
// our own unit templates.
func serviceConfig(userMode bool, configPath string) (*service.Config, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return nil, err
	}
	args := []string{"run"}
	if configPath != "" {
		abs, err := filepath.Abs(configPath)
		if err != nil {
			return nil, err
		}
		args = append(args, "--config", abs)
	}
	opt := service.KeyValue{"UserService": userMode}
	if runtime.GOOS == "linux" {
		unit := packaging.SystemUnit
		if userMode {
			unit = packaging.UserUnit
		}
		opt["SystemdScript"] = unit
	}
	return &service.Config{
		Name:        "sessiond",
		DisplayName: "sessiond",
		Description: "sessiond: supervisor for long-running AI coding-agent sessions",
		Executable:  exe,
		Arguments:   args,
		Option:      opt,
	}, nil
}

func newServiceCmds() []*cobra.Command {
	var userMode bool
	var configPath string
	control := func(use, short string, do func(s service.Service) error) *cobra.Command {
		cmd := &cobra.Command{
			Use:   use,
			Short: short,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				if !userMode && os.Geteuid() != 0 {
					return &exitError{1, errors.New("the system service needs root: run with sudo, or use --user for a user service")}
				}
				cfg, err := serviceConfig(userMode, configPath)
				if err != nil {
					return err
				}
				s, err := service.New(controlOnly{}, cfg)
				if err != nil {
					return err
				}
				return do(s)
			},
		}
		cmd.Flags().BoolVar(&userMode, "user", false, "the user service (systemd --user, launchd agent) instead of the system one")
		return cmd
	}
	install := control("install", "Install sessiond as a service (systemd unit; launchd on macOS)", func(s service.Service) error {
		if err := s.Install(); err != nil {
			return fmt.Errorf("install: %w", err)
		}
		fmt.Println("sessiond service installed; start it with `sessiond start`")
		if userMode {
			lingerHint()
		}
		return nil
	})
	install.Flags().StringVar(&configPath, "config", "", "config file the service runs with (default: "+config.DefaultConfigPath()+")")
	status := control("status", "Print the service's status", func(s service.Service) error {
		st, err := s.Status()
		if err != nil {
			return err
		}
		fmt.Println(map[service.Status]string{service.StatusRunning: "running", service.StatusStopped: "stopped"}[st])
		return nil
	})
	return []*cobra.Command{
		install,
		control("uninstall", "Remove the service", func(s service.Service) error { return s.Uninstall() }),
		control("start", "Start the service", func(s service.Service) error { return s.Start() }),
		control("stop", "Stop the service (sessions end as on_shutdown says)", func(s service.Service) error { return s.Stop() }),
		control("restart", "Restart the service", func(s service.Service) error { return s.Restart() }),
		status,
	}
}

// lingerHint says when a user service would stop at logout.
func lingerHint() {
	if runtime.GOOS != "linux" {
		return
	}
	u, err := user.Current()
	if err != nil {
		return
	}
	if _, err := os.Stat(filepath.Join("/var/lib/systemd/linger", u.Username)); err == nil {
		return
	}
	fmt.Printf("note: without lingering, systemd stops user services when %s logs out, and the sessions with them.\n"+
		"      Run `loginctl enable-linger %s` to keep sessiond running.\n", u.Username, u.Username)
}
