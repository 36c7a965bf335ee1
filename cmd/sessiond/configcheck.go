package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/config/configfile"
	"github.com/sessiond/sessiond/daemon/notify"
)

// checkConfig is "sessiond config check": the daemon config (and, with
// projectDir, that project's sessiond.toml) parsed and validated, then
// every notification rule checked beyond its syntax — its command found,
// its secret readable, its desktop notifier installed. It prints the
// effective config, webhook URLs cut to their hosts, or every problem
// found, each at its file and line, and exits 1.
func checkConfig(out, errOut io.Writer, path, projectDir string) error {
	cfg, err := loadConfig(runFlags{config: path})
	if err != nil {
		return err
	}
	file := path
	if file == "" {
		file = config.DefaultConfigPath()
	}
	// The file parsed: it is read again only for the lines of problems.
	data, _ := os.ReadFile(file)
	var problems []error
	for i, r := range cfg.Notify {
		if err := notify.Check(r, ""); err != nil {
			problems = append(problems, configfile.RuleError(file, data, i, err))
		}
	}
	if projectDir != "" {
		problems = append(problems, checkProject(projectDir, cfg)...)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(errOut, "sessiond:", p)
		}
		return &exitError{code: 1}
	}
	shown := *cfg
	shown.Notify = make([]config.NotifyRule, len(cfg.Notify))
	for i, r := range cfg.Notify {
		shown.Notify[i] = r.Redacted()
	}
	return printConfig(out, &shown)
}

// checkProject checks a project's sessiond.toml over the daemon's
// defaults: its spec, and its notification rules, whose relative commands
// are found from the project.
func checkProject(dir string, cfg *config.Config) []error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return []error{err}
	}
	file := filepath.Join(dir, config.ProjectFile)
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return []error{fmt.Errorf("%s does not exist: nothing to check in %s", file, dir)}
	}
	if err != nil {
		return []error{err}
	}
	if _, err := configfile.ParseProject(file, data, cfg.Defaults.Clone()); err != nil {
		return []error{err}
	}
	rules, err := configfile.ParseProjectNotify(file, data)
	if err != nil {
		return []error{err}
	}
	var problems []error
	for i, r := range rules {
		if err := notify.Check(r, dir); err != nil {
			problems = append(problems, configfile.RuleError(file, data, i, err))
		}
	}
	return problems
}
