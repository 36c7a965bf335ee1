// Package fakeagent is what the stand-in agents under testdata (claude and
// codex) share: their script, their log, running hook commands and calling
// MCP tools. The stand-ins behave like the real CLIs, offline and on cue;
// see README.md beside this file for how tests drive them.
package fakeagent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Step is one step of a script: a verb and its argument (after "=").
type Step struct {
	Verb, Arg string
}

// Script reads FAKEAGENT_SCRIPT (steps separated by commas), or def. A
// script of several runs separated by semicolons gives each run of the
// agent the next one (the last one over again), counted in
// $FAKEAGENT_DIR/runs.
func Script(def string) []Step {
	s := os.Getenv("FAKEAGENT_SCRIPT")
	if s == "" {
		s = def
	}
	if runs := strings.Split(s, ";"); len(runs) > 1 {
		n := 0
		if dir := os.Getenv("FAKEAGENT_DIR"); dir != "" {
			counter := filepath.Join(dir, "runs")
			b, _ := os.ReadFile(counter)
			n = strings.Count(string(b), "\n")
			if f, err := os.OpenFile(counter, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err == nil {
				_, _ = f.WriteString("run\n")
				f.Close()
			}
		}
		s = runs[min(n, len(runs)-1)]
	}
	var steps []Step
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		verb, arg, _ := strings.Cut(part, "=")
		steps = append(steps, Step{Verb: verb, Arg: arg})
	}
	return steps
}

// Delay is FAKEAGENT_DELAY, the pause before each step.
func Delay() time.Duration {
	d, _ := time.ParseDuration(os.Getenv("FAKEAGENT_DELAY"))
	return d
}

// Tokens is the usage of one model request: FAKEAGENT_USAGE as
// "input,output,cache_read,cache_write" (default 25,15,50,100, what the
// real CLIs were measured with against a stand-in API).
type Tokens struct{ Input, Output, CacheRead, CacheWrite int64 }

// RequestTokens reads FAKEAGENT_USAGE.
func RequestTokens() Tokens {
	t := Tokens{25, 15, 50, 100}
	if s := os.Getenv("FAKEAGENT_USAGE"); s != "" {
		var v [4]int64
		for i, f := range strings.SplitN(s, ",", 4) {
			v[i], _ = strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		}
		t = Tokens{v[0], v[1], v[2], v[3]}
	}
	return t
}

// CostPerRequest is FAKEAGENT_COST (US dollars per model request, default
// 0.01).
func CostPerRequest() float64 {
	if c, err := strconv.ParseFloat(os.Getenv("FAKEAGENT_COST"), 64); err == nil {
		return c
	}
	return 0.01
}

// Log appends JSON lines to FAKEAGENT_LOG, one per thing the stand-in did.
type Log struct {
	mu    sync.Mutex
	agent string
	path  string
}

// NewLog opens the log of agent.
func NewLog(agent string) *Log { return &Log{agent: agent, path: os.Getenv("FAKEAGENT_LOG")} }

// Write logs one entry: event and its fields.
func (l *Log) Write(event string, fields map[string]any) {
	if l.path == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	entry := map[string]any{"agent": l.agent, "event": event, "pid": os.Getpid(), "time": time.Now().UTC().Format(time.RFC3339Nano)}
	for k, v := range fields {
		entry[k] = v
	}
	data, _ := json.Marshal(entry)
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeagent: log:", err)
		return
	}
	defer f.Close()
	f.Write(append(data, '\n'))
}

// Fail logs an error, says it on stderr as the real CLIs do, and exits 1.
func (l *Log) Fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.Write("error", map[string]any{"message": msg})
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(1)
}

// WaitFile waits until FAKEAGENT_DIR/name exists (a test's cue, such as a
// permission granted), or a signal ends the wait. It reports whether the
// file came.
func WaitFile(name string, stop <-chan os.Signal) bool {
	dir := os.Getenv("FAKEAGENT_DIR")
	if dir == "" {
		<-stop
		return false
	}
	path := filepath.Join(dir, name)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		select {
		case <-stop:
			return false
		case <-tick.C:
		}
	}
}

// Signals are SIGTERM, SIGINT and SIGHUP, which end a hanging stand-in.
func Signals() chan os.Signal {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	return c
}

// RunCommand runs a hook command as the CLIs do (sh -c, in dir, payload on
// stdin or as the last argument) and logs what it did.
func RunCommand(l *Log, hook string, argv []string, stdin []byte, dir string, timeout time.Duration) (stdout string, code int) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = strings.NewReader(string(stdin))
	}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	code = 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	l.Write("hook", map[string]any{"hook": hook, "command": argv, "exit": code, "stdout": out.String(), "stderr": errOut.String(), "ms": time.Since(start).Milliseconds()})
	return out.String(), code
}

// MCPServer is an MCP server as an agent's configuration names it.
type MCPServer struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
}

// MCPClients are the agent's connections to its MCP servers: started at
// the first call, kept for the agent's life as a real agent keeps them.
type MCPClients struct {
	log      *Log
	inherit  bool
	sessions map[string]*sdk.ClientSession
}

// NewMCPClients makes the connections of an agent that passes its own
// environment on to its MCP servers (inheritEnv, as Claude Code does) or
// gives them only PATH, HOME and their entry's env (as Codex does).
func NewMCPClients(l *Log, inheritEnv bool) *MCPClients {
	return &MCPClients{log: l, inherit: inheritEnv, sessions: map[string]*sdk.ClientSession{}}
}

func (m *MCPClients) session(s MCPServer) (*sdk.ClientSession, error) {
	if cs, ok := m.sessions[s.Name]; ok {
		return cs, nil
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	if m.inherit {
		env = os.Environ()
	}
	for k, v := range s.Env {
		env = append(env, k+"="+v)
	}
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Env = env
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: m.log.agent + "-stand-in", Version: "0"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, err
	}
	m.sessions[s.Name] = cs
	return cs, nil
}

// Call calls tool on server s with the JSON arguments args, logs the result
// and returns its text.
func (m *MCPClients) Call(s MCPServer, tool, args string) string {
	fields := map[string]any{"server": s.Name, "tool": tool}
	cs, err := m.session(s)
	if err != nil {
		fields["error"] = err.Error()
		m.log.Write("mcp", fields)
		return ""
	}
	var arguments map[string]any
	if args != "" {
		if err := json.Unmarshal([]byte(args), &arguments); err != nil {
			fields["error"] = "arguments: " + err.Error()
			m.log.Write("mcp", fields)
			return ""
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: arguments})
	if err != nil {
		fields["error"] = err.Error()
		m.log.Write("mcp", fields)
		return ""
	}
	var text []string
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			text = append(text, t.Text)
		}
	}
	fields["is_error"], fields["text"], fields["structured"] = res.IsError, strings.Join(text, "\n"), res.StructuredContent
	m.log.Write("mcp", fields)
	return strings.Join(text, "\n")
}

// Close ends every connection (the servers see their stdin close).
func (m *MCPClients) Close() {
	for _, cs := range m.sessions {
		cs.Close()
	}
}

// FirstLine is the first line of s.
func FirstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// Append writes lines (each a JSON value) to the end of path, creating it
// and its directory.
func Append(path string, values ...any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, v := range values {
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := f.Write(append(data, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// Now is the current time as the CLIs stamp their lines.
func Now() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z") }
