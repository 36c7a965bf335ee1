// Package agenttest gives tests of any package the stand-in agents of
// daemon/agent/testdata: programs named claude and codex that behave like
// the real CLIs offline (flags, hooks with the real payloads, transcripts
// with usage, resume), on a script the test sets in the environment. See
// daemon/agent/testdata/fakeagent/README.md for the script.
//
//	bin := agenttest.Build(t)
//	cmd := exec.Command("claude", "-p", "go on")
//	cmd.Env = append(os.Environ(), "PATH="+agenttest.Path(bin), "FAKEAGENT_LOG="+log, "FAKEAGENT_SCRIPT=prompt,ask,stop,exit")
//	...
//	for _, e := range agenttest.ReadLog(t, log) { ... }
package agenttest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The stand-ins' packages.
const (
	claudePackage = "github.com/sessiond/sessiond/daemon/agent/testdata/claude"
	codexPackage  = "github.com/sessiond/sessiond/daemon/agent/testdata/codex"
)

var built struct {
	once sync.Once
	dir  string
	err  error
}

// Build compiles the stand-ins (once per test binary) and returns the
// directory that holds claude and codex; put it first on PATH. The go
// command must run inside this module, as go test does.
func Build(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = build()
	})
	if built.err != nil {
		t.Fatalf("build the stand-in agents: %v", built.err)
	}
	return built.dir
}

func build() (string, error) {
	dir, err := os.MkdirTemp("", "sessiond-agents-")
	if err != nil {
		return "", err
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	for name, pkg := range map[string]string{"claude": claudePackage, "codex": codexPackage} {
		cmd := exec.Command(gobin, "build", "-o", filepath.Join(dir, name), pkg)
		if out, err := cmd.CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	return dir, nil
}

// Cleanup removes what Build made; call it from TestMain after m.Run.
func Cleanup() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

// Path is this process's PATH with dir first.
func Path(dir string) string {
	return dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// Entry is one line of a stand-in's log (FAKEAGENT_LOG).
type Entry struct {
	Agent string `json:"agent"`
	// Event is start, step, hook, context, mcp, granted, waiting,
	// budget_exceeded, stop_blocked, settings_ignored, crash, exit, error.
	Event string `json:"event"`
	PID   int    `json:"pid"`
	// start
	Argv           []string `json:"argv"`
	ConversationID string   `json:"conversation_id"`
	Transcript     string   `json:"transcript"`
	Source         string   `json:"source"`
	// step
	Verb string `json:"verb"`
	Arg  string `json:"arg"`
	// hook: the event (or "notify"), the command, its exit code and output
	Hook    string   `json:"hook"`
	Command []string `json:"command"`
	Exit    int      `json:"exit"`
	Stdout  string   `json:"stdout"`
	Stderr  string   `json:"stderr"`
	// context: the text a hook added to the conversation; mcp: the tool's
	Text string `json:"text"`
	// mcp
	Tool    string `json:"tool"`
	IsError bool   `json:"is_error"`
	Error   string `json:"error"`
	// exit
	Code    int     `json:"code"`
	CostUSD float64 `json:"cost_usd"`
	// error
	Message string `json:"message"`
}

// ReadLog reads a stand-in's log; a missing log is no entries.
func ReadLog(t testing.TB, path string) []Entry {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v: %q", path, err, sc.Text())
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Hooks are the names of the hooks a log shows run, in order.
func Hooks(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		if e.Event == "hook" {
			out = append(out, e.Hook)
		}
	}
	return out
}

// Find returns the entries of one event.
func Find(entries []Entry, event string) []Entry {
	var out []Entry
	for _, e := range entries {
		if e.Event == event {
			out = append(out, e)
		}
	}
	return out
}

// String is a short line for failure messages.
func (e Entry) String() string {
	parts := []string{e.Agent, e.Event}
	for _, s := range []string{e.Hook, e.Verb, e.Tool, e.Message, e.Error} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " ")
}

// RealClaudeVersion is the Claude Code release the adapter was written
// against and RealClaude installs.
const RealClaudeVersion = "2.1.328"

// RealClaude returns the path of the real Claude Code CLI: SESSIOND_TEST_CLAUDE
// if set, else the npm package installed once into the user's cache
// directory (about 6 s and 380 MB the first time; `npm install --prefix
// DIR @anthropic-ai/claude-code@2.1.328`).
func RealClaude(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("SESSIOND_TEST_CLAUDE"); p != "" {
		return p
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatalf("no cache directory for the Claude Code package: %v", err)
	}
	dir := filepath.Join(cache, "sessiond-test", "claude-code-"+RealClaudeVersion)
	bin := filepath.Join(dir, "node_modules", ".bin", "claude")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatal("npm is not installed: the real Claude Code is installed from npm (apt-get install npm)")
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	// Install beside the cache entry and rename it into place, so that a
	// cut-short install never passes for a complete one.
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	t.Logf("installing @anthropic-ai/claude-code@%s into %s", RealClaudeVersion, dir)
	started := time.Now()
	cmd := exec.Command(npm, "install", "--prefix", tmp, "--no-audit", "--no-fund", "--loglevel=error", "@anthropic-ai/claude-code@"+RealClaudeVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install @anthropic-ai/claude-code@%s: %v\n%s", RealClaudeVersion, err, out)
	}
	out, err := exec.Command(filepath.Join(tmp, "node_modules", ".bin", "claude"), "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), RealClaudeVersion) {
		t.Fatalf("the installed claude --version says %q (%v), want %s", out, err, RealClaudeVersion)
	}
	if err := os.Rename(tmp, dir); err != nil && !regularFile(bin) {
		t.Fatalf("put the package in place: %v", err)
	}
	t.Logf("installed in %s", time.Since(started).Round(100*time.Millisecond))
	return bin
}

func regularFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
