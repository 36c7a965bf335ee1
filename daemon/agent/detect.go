package agent

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// Agent settings of the spec besides the adapters' names.
const (
	// SettingAuto recognises the agent from the command's executable.
	SettingAuto = "auto"
	// SettingNone runs even a recognised agent untouched (the
	// --no-agent-integration flag): the Generic adapter.
	SettingNone = "none"
)

// registry is every adapter by name, and by the executable names each
// answers to. Adapters add themselves from their own file's init, so that a
// new agent is one file.
var registry = struct {
	byName       map[string]Adapter
	byExecutable map[string]Adapter
}{map[string]Adapter{}, map[string]Adapter{}}

// register adds a to the registry under its name and executables.
func register(a Adapter, executables ...string) {
	if _, dup := registry.byName[a.Name()]; dup {
		panic("agent: adapter registered twice: " + a.Name())
	}
	registry.byName[a.Name()] = a
	for _, e := range executables {
		registry.byExecutable[e] = a
	}
}

// Names returns the agent settings the spec accepts, sorted: the adapters'
// names, "auto" and "none".
func Names() []string {
	names := []string{SettingAuto, SettingNone}
	for n := range registry.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the adapter called name ("claude-code", "codex",
// "generic").
func Lookup(name string) (Adapter, error) {
	if a, ok := registry.byName[name]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("%w %q: want one of %s", ErrUnknownAgent, name, strings.Join(Names(), ", "))
}

// Detect returns the adapter for a spec's agent setting and command:
// "auto" (or "") recognises the agent from the basename of argv[0] (claude:
// claude-code, codex: codex, anything else: generic), "none" is generic
// (the command runs untouched), and any other setting names the adapter.
func Detect(setting string, argv []string) (Adapter, error) {
	switch setting {
	case "", SettingAuto:
		if len(argv) > 0 {
			if a, ok := registry.byExecutable[executableName(argv[0])]; ok {
				return a, nil
			}
		}
		return Generic, nil
	case SettingNone:
		return Generic, nil
	}
	return Lookup(setting)
}

// executableName is the basename of an executable path, without the .exe
// the npm packages' binaries carry.
func executableName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".exe")
}
