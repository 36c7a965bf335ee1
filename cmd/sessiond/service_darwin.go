package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/kardianos/service"

	"github.com/sessiond/sessiond/packaging"
)

const launchdLabel = "sessiond"

// serviceHostCheck: launchd is always there.
func serviceHostCheck(string, bool) error { return nil }

// serviceFiles returns the property list that install writes. Loading it
// makes no other file.
func serviceFiles(userMode bool) (string, []string, error) {
	if !userMode {
		return "/Library/LaunchDaemons/" + launchdLabel + ".plist", nil, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", nil, fmt.Errorf("the launchd agent goes under your home directory: %w", err)
	}
	return filepath.Join(home, "Library", "LaunchAgents", launchdLabel+".plist"), nil, nil
}

func launchdLog(userMode bool) string {
	if userMode {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, "Library", "Logs", "sessiond.log")
		}
	}
	return "/Library/Logs/sessiond.log"
}

// serviceContent renders the job and the kardianos/service options that
// make it write exactly that.
func serviceContent(userMode bool, exe string, args []string) (string, service.KeyValue, error) {
	plist, err := packaging.LaunchdPlist(launchdLabel, exe, args, launchdLog(userMode))
	if err != nil {
		return "", nil, err
	}
	return plist, service.KeyValue{"UserService": userMode, "LaunchdConfig": plist}, nil
}

// serviceVendorPath: nothing installs sessiond's job on macOS but sessiond.
func serviceVendorPath(bool) string { return "" }

var launchdPID = regexp.MustCompile(`"PID" = ([0-9]+);`)

// serviceQuery asks launchd about the job.
func serviceQuery(userMode bool) (serviceState, error) {
	path, _, err := serviceFiles(userMode)
	if err != nil {
		return serviceState{}, err
	}
	var st serviceState
	if _, err := os.Stat(path); err == nil {
		st.Installed, st.Path = true, path
	}
	// launchctl list exits non-zero when the job is not loaded.
	out, _ := exec.Command("launchctl", "list", launchdLabel).Output()
	if m := launchdPID.FindSubmatch(out); m != nil {
		st.Running = true
		st.PID, _ = strconv.Atoi(string(m[1]))
	}
	return st, nil
}

// serviceCommandLine reads the command line a job runs.
func serviceCommandLine(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	argv, err := packaging.LaunchdArguments(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return argv, nil
}

func serviceHints(userMode bool) hints {
	if userMode {
		return hints{kind: "user service (launchd agent)", control: "sessiond %s --user", logs: "tail -f " + launchdLog(true), enabled: "it starts when you log in"}
	}
	h := hints{kind: "system service (launchd daemon)", control: "sessiond %s", logs: "tail -f " + launchdLog(false), enabled: "it starts at boot"}
	if os.Geteuid() != 0 {
		h.control = "sudo " + h.control
	}
	return h
}

func vendorAdvice(bool, string) string { return "" }

// lingerHint: launchd agents need no lingering.
func lingerHint() string { return "" }
