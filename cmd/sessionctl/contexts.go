package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/ipc"
)

// Contexts are named hosts, as docker's and kubectl's are: kept in the
// user's config directory, one of them current. "default" is this host's
// daemon, always there, never stored.

// ContextEnv names the environment variable that chooses a context, over
// the current one.
const ContextEnv = "SESSIOND_CONTEXT"

// defaultContext is the name of this host's daemon.
const defaultContext = "default"

// contextFile is the contexts' file: {"current": NAME, "contexts": {NAME:
// {"host": URL, "description": TEXT}}}, mode 0600.
type contextFile struct {
	Current  string                  `json:"current,omitempty"`
	Contexts map[string]contextEntry `json:"contexts"`
}

type contextEntry struct {
	Host        string `json:"host"`
	Description string `json:"description,omitempty"`
}

var contextName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.+-]{0,62}$`) })

// contextsPath is where the contexts are kept: $XDG_CONFIG_HOME or
// ~/.config, sessiond/contexts.json.
func contextsPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no config directory for the contexts: %w", err)
	}
	return filepath.Join(dir, "sessiond", "contexts.json"), nil
}

func loadContexts() (*contextFile, string, error) {
	path, err := contextsPath()
	if err != nil {
		return nil, "", err
	}
	cf := &contextFile{Contexts: map[string]contextEntry{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cf, path, nil
	}
	if err != nil {
		return nil, path, err
	}
	if err := json.Unmarshal(data, cf); err != nil {
		// Not read as no contexts: the current one may be another host's,
		// and a command meant for it must not act on this one.
		return nil, path, &corruptContexts{path: path, err: err}
	}
	if cf.Contexts == nil {
		cf.Contexts = map[string]contextEntry{}
	}
	return cf, path, nil
}

// corruptContexts is a contexts file that is not JSON.
type corruptContexts struct {
	path string
	err  error
}

func (e *corruptContexts) Error() string {
	return fmt.Sprintf("%s: %v (sessionctl context ls sets it aside and starts anew; or fix it)", e.path, e.err)
}

// loadContextsToEdit is loadContexts for the context commands, which
// repair: a file that is not JSON is set aside as PATH.corrupt-<time>, said
// on stderr, and the contexts start anew.
func (a *app) loadContextsToEdit() (*contextFile, string, error) {
	cf, path, err := loadContexts()
	var bad *corruptContexts
	if !errors.As(err, &bad) {
		return cf, path, err
	}
	aside := path + ".corrupt-" + time.Now().UTC().Format("20060102T150405Z")
	if rerr := os.Rename(path, aside); rerr != nil {
		return nil, path, fmt.Errorf("%w; setting it aside failed: %v", err, rerr)
	}
	fmt.Fprintf(a.errOut, "sessionctl: warning: %s was not JSON (%v): set aside as %s; the contexts start anew\n", path, bad.err, aside)
	return &contextFile{Contexts: map[string]contextEntry{}}, path, nil
}

// save writes the file whole, atomically, owner-only.
func (cf *contextFile) save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	data, err := json.MarshalIndent(cf, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".contexts-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// host is the URL of context name ("" for default).
func (cf *contextFile) host(name string) (string, error) {
	if name == defaultContext {
		return "", nil
	}
	e, ok := cf.Contexts[name]
	if !ok {
		return "", &exitError{exitUsage, fmt.Errorf("no context %q (sessionctl context ls lists them)", name)}
	}
	return e.Host, nil
}

// names are the contexts, default first.
func (cf *contextFile) names() []string {
	out := []string{defaultContext}
	for n := range cf.Contexts {
		out = append(out, n)
	}
	slices.Sort(out[1:])
	return out
}

func (a *app) contextCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "context",
		Short: "Named hosts to talk to: add, ls, use, rm (as docker and kubectl keep them)",
		Long: `Named hosts, kept in ~/.config/sessiond/contexts.json: sessionctl talks to the
current one (default: this host's daemon) unless --host, --context,
SESSIOND_HOST or SESSIOND_CONTEXT says otherwise.`,
	}
	var description string
	add := &cobra.Command{
		Use:   "add NAME ssh://[user@]host[:port]",
		Short: "Add a context (or replace its host, keeping its description unless --description is given)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, host := args[0], args[1]
			if !contextName().MatchString(name) || name == defaultContext {
				return usageErr("context name %q: letters, digits and _.+- (not %q, which is this host)", name, defaultContext)
			}
			if _, err := ipc.ParseHost(host); err != nil {
				return usageErr("%v", err)
			}
			cf, path, err := a.loadContextsToEdit()
			if err != nil {
				return err
			}
			entry := contextEntry{Host: host, Description: description}
			if old, ok := cf.Contexts[name]; ok && !cmd.Flags().Changed("description") {
				// A new host for the context: what it is stays said.
				entry.Description = old.Description
			}
			cf.Contexts[name] = entry
			if err := cf.save(path); err != nil {
				return err
			}
			fmt.Fprintln(a.out, name)
			return nil
		},
	}
	add.Flags().StringVar(&description, "description", "", "what the host is")
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the contexts; * marks the current one",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cf, _, err := a.loadContextsToEdit()
			if err != nil {
				return err
			}
			current := a.contextName(cf)
			if a.json {
				type row struct {
					Name        string `json:"name"`
					Host        string `json:"host"`
					Description string `json:"description,omitempty"`
					Current     bool   `json:"current"`
				}
				var out []row
				for _, n := range cf.names() {
					e := cf.Contexts[n]
					out = append(out, row{Name: n, Host: e.Host, Description: e.Description, Current: n == current})
				}
				return a.printJSON(out)
			}
			t := newTable(a.useColor())
			t.header("NAME", "HOST", "DESCRIPTION")
			for _, n := range cf.names() {
				e := cf.Contexts[n]
				host, desc := e.Host, e.Description
				if n == defaultContext {
					host, desc = "this host ("+a.socket+")", "this host's daemon"
				}
				mark := n
				if n == current {
					mark += " *"
				}
				t.row(cell{text: ipc.TerminalLine(mark)}, cell{text: ipc.TerminalLine(host)}, cell{text: ipc.TerminalLine(desc)})
			}
			t.write(a.out)
			return nil
		},
	}
	use := &cobra.Command{
		Use:   "use NAME",
		Short: "Make NAME the current context (default: this host)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cf, path, err := a.loadContextsToEdit()
			if err != nil {
				return err
			}
			if _, err := cf.host(args[0]); err != nil {
				return err
			}
			cf.Current = args[0]
			if args[0] == defaultContext {
				cf.Current = ""
			}
			if err := cf.save(path); err != nil {
				return err
			}
			fmt.Fprintf(a.out, "current context: %s\n", args[0])
			return nil
		},
	}
	rm := &cobra.Command{
		Use:   "rm NAME...",
		Short: "Remove contexts",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cf, path, err := a.loadContextsToEdit()
			if err != nil {
				return err
			}
			// As rm and stop do: the others are removed, each one that
			// cannot be is a line on stderr, and the exit is 1.
			var removed []string
			failed := false
			for _, n := range args {
				_, ok := cf.Contexts[n]
				switch {
				case n == defaultContext:
					fmt.Fprintf(a.errOut, "sessionctl: %q is this host's own daemon, always there: it cannot be removed (context use NAME makes another current)\n", n)
					failed = true
					continue
				case !ok:
					fmt.Fprintf(a.errOut, "sessionctl: no context %q (sessionctl context ls lists them)\n", n)
					failed = true
					continue
				}
				delete(cf.Contexts, n)
				if cf.Current == n {
					cf.Current = ""
				}
				removed = append(removed, n)
			}
			if len(removed) > 0 {
				if err := cf.save(path); err != nil {
					return err
				}
			}
			for _, n := range removed {
				fmt.Fprintln(a.out, n)
			}
			if failed {
				return &exitError{exitFailed, errQuiet}
			}
			return nil
		},
	}
	cmd.AddCommand(add, ls, use, rm)
	return cmd
}

// contextName is the context this invocation uses: --context, else
// SESSIOND_CONTEXT, else the current one.
func (a *app) contextName(cf *contextFile) string {
	switch {
	case a.context != "":
		return a.context
	case os.Getenv(ContextEnv) != "":
		return os.Getenv(ContextEnv)
	case cf.Current != "":
		return cf.Current
	}
	return defaultContext
}

// contextHosts are the hosts of a comma-separated list of contexts, or of
// every one with all: name and URL ("" for this host).
func (a *app) contextHosts(list string, all bool) ([][2]string, error) {
	cf, _, err := loadContexts()
	if err != nil {
		return nil, err
	}
	names := cf.names()
	if !all {
		names = nil
		for _, n := range strings.Split(list, ",") {
			if n = strings.TrimSpace(n); n != "" && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	var out [][2]string
	for _, n := range names {
		host, err := cf.host(n)
		if err != nil {
			return nil, err
		}
		out = append(out, [2]string{n, host})
	}
	return out, nil
}
