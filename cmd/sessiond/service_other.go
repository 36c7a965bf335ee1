//go:build !linux && !darwin

package main

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/kardianos/service"
)

var errNoServiceManager = fmt.Errorf("sessiond installs itself as a service only on Linux with systemd and on macOS with launchd,\n"+
	"not on %s. Run `sessiond run` in the foreground under this host's own service manager instead.", runtime.GOOS)

func serviceHostCheck(string, bool) error { return errNoServiceManager }

func serviceFiles(bool) (string, []string, error) { return "", nil, errNoServiceManager }

func serviceContent(bool, string, []string) (string, service.KeyValue, error) {
	return "", nil, errNoServiceManager
}

func serviceVendorPath(bool) string { return "" }

func serviceQuery(bool) (serviceState, error) { return serviceState{}, errNoServiceManager }

func serviceCommandLine(string) ([]string, error) { return nil, errors.New("no service manager") }

func serviceHints(bool) hints { return hints{kind: "service", control: "sessiond %s"} }

func vendorAdvice(bool, string) string { return "" }

func lingerHint() string { return "" }
