// Command claude is a stand-in for Claude Code 2.1.328 in tests: it takes
// the real CLI's flags, runs the hooks of its settings with the payloads the
// real one gives them, writes a transcript with usage lines where the real
// one does, honours --session-id, --resume and --continue, starts the MCP
// servers of --mcp-config to call their tools, and does it all offline, on
// the script FAKEAGENT_SCRIPT gives (see ../fakeagent/README.md).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"golang.org/x/term"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/sessiond/sessiond/daemon/agent/testdata/fakeagent"
)

const version = "2.1.328"

// options that take a value, as commander reads them.
var (
	oneValue = map[string]bool{
		"--session-id": true, "--settings": true, "--model": true, "--max-budget-usd": true, "--output-format": true,
		"--permission-mode": true, "--append-system-prompt": true, "--system-prompt": true, "--effort": true,
		"-n": true, "--name": true, "--agent": true, "--agents": true, "--input-format": true, "--fallback-model": true,
		"--debug-file": true, "--setting-sources": true, "--json-schema": true, "--max-turns": true, "--permission-prompts": true,
	}
	optionalValue = map[string]bool{"-r": true, "--resume": true, "-d": true, "--debug": true, "-w": true, "--worktree": true}
	manyValues    = map[string]bool{
		"--mcp-config": true, "--allowedTools": true, "--allowed-tools": true, "--disallowedTools": true,
		"--disallowed-tools": true, "--add-dir": true, "--tools": true, "--betas": true, "--file": true,
	}
	subcommands = map[string]bool{"agents": true, "auth": true, "doctor": true, "install": true, "mcp": true, "plugin": true, "update": true}
)

type cli struct {
	print, cont, fork, bare bool
	resumeSet               bool
	resume, sessionID       string
	settings                []string
	mcpConfigs              []string
	maxBudget               float64
	prompt                  string
	subcommand              string
	version                 bool
}

func parse(args []string) (cli, error) {
	var c cli
	var positionals []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positionals = append(positionals, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			positionals = append(positionals, a)
			continue
		}
		name, value, inline := a, "", false
		if k := strings.IndexByte(a, '='); k > 0 && strings.HasPrefix(a, "--") {
			name, value, inline = a[:k], a[k+1:], true
		}
		var values []string
		switch {
		case inline:
			values = []string{value}
		case oneValue[name]:
			if i+1 >= len(args) {
				return c, fmt.Errorf("error: option '%s <value>' argument missing", name)
			}
			i++
			values = []string{args[i]}
		case optionalValue[name]:
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				values = []string{args[i]}
			}
		case manyValues[name]:
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				values = append(values, args[i])
			}
		}
		first := ""
		if len(values) > 0 {
			first = values[0]
		}
		switch name {
		case "-p", "--print":
			c.print = true
		case "-c", "--continue":
			c.cont = true
		case "--fork-session":
			c.fork = true
		case "--bare", "--safe-mode":
			c.bare = true
		case "-v", "--version":
			c.version = true
		case "-r", "--resume":
			c.resumeSet, c.resume = true, first
		case "--session-id":
			c.sessionID = first
		case "--settings":
			c.settings = append(c.settings, first)
		case "--mcp-config":
			c.mcpConfigs = append(c.mcpConfigs, values...)
		case "--max-budget-usd":
			v, err := strconv.ParseFloat(first, 64)
			if err != nil || v <= 0 {
				//lint:ignore ST1005 the real CLI's message
				return c, fmt.Errorf("Error: --max-budget-usd must be a positive number")
			}
			c.maxBudget = v
		}
	}
	if len(positionals) > 0 {
		if subcommands[positionals[0]] {
			c.subcommand = positionals[0]
		} else {
			c.prompt = positionals[0]
		}
	}
	return c, nil
}

// agent is one run of the stand-in.
type agent struct {
	log        *fakeagent.Log
	cli        cli
	cwd        string
	id         string
	transcript string
	hooks      map[string][]hookGroup
	mcp        []fakeagent.MCPServer
	clients    *fakeagent.MCPClients
	stop       chan os.Signal
	parent     string
	promptID   string
	lastReply  string
	cost       float64
	turns      int
}

type hookGroup struct {
	Matcher string `json:"matcher"`
	Hooks   []struct {
		Type    string  `json:"type"`
		Command string  `json:"command"`
		Timeout float64 `json:"timeout"`
	} `json:"hooks"`
}

func main() {
	log := fakeagent.NewLog("claude")
	c, err := parse(os.Args[1:])
	if err != nil {
		log.Fail("%v", err)
	}
	if c.version {
		fmt.Println(version + " (Claude Code)")
		return
	}
	if c.subcommand != "" {
		log.Write("subcommand", map[string]any{"argv": os.Args})
		fmt.Printf("claude %s: nothing to do in the stand-in\n", c.subcommand)
		return
	}
	cwd, _ := os.Getwd()
	a := &agent{log: log, cli: c, cwd: cwd, stop: fakeagent.Signals(), clients: fakeagent.NewMCPClients(log, true)}
	source := a.conversation()
	a.loadHooks()
	a.loadMCP()
	a.cost = lastCost(a.transcript)
	log.Write("start", map[string]any{"argv": os.Args, "conversation_id": a.id, "transcript": a.transcript, "source": source,
		"print": c.print, "hook_events": len(a.hooks), "mcp_servers": len(a.mcp), "max_budget_usd": c.maxBudget})

	a.hook("SessionStart", source, map[string]any{"source": source, "model": "claude-stand-in"})
	def := "hang"
	switch {
	case c.print:
		def = "prompt,tool,stop,exit"
	case c.prompt != "":
		def = "prompt,tool,stop,hang"
	}
	for _, step := range fakeagent.Script(def) {
		if d := fakeagent.Delay(); d > 0 {
			a.sleep(d)
		}
		a.do(step)
	}
	if c.print {
		a.exit(0, "other")
	}
	a.hang()
}

// conversation picks the conversation id as Claude Code does, failing as it
// does, and returns the SessionStart source.
func (a *agent) conversation() string {
	c := a.cli
	if c.sessionID != "" {
		if _, err := uuid.Parse(c.sessionID); err != nil || len(c.sessionID) != 36 {
			a.log.Fail("Error: Invalid session ID. Must be a valid UUID.")
		}
		if (c.resumeSet || c.cont) && !c.fork {
			a.log.Fail("Error: --session-id with --continue or --resume also needs --fork-session.")
		}
	}
	dir := filepath.Join(configDir(), "projects", projectKey(a.cwd))
	source := "startup"
	switch {
	case c.resumeSet && c.resume != "":
		path := filepath.Join(dir, c.resume+".jsonl")
		if _, err := os.Stat(path); err != nil {
			a.log.Fail("No conversation found with session ID: %s", c.resume)
		}
		a.id, source = c.resume, "resume"
	case c.resumeSet || c.cont:
		id, ok := latest(dir)
		if !ok {
			a.log.Fail("No conversation found to continue")
		}
		a.id, source = id, "resume"
	}
	if a.id != "" && c.fork {
		// A fork copies the conversation under a new id.
		from := filepath.Join(dir, a.id+".jsonl")
		a.id = c.sessionID
		if a.id == "" {
			a.id = uuid.NewString()
		}
		data, _ := os.ReadFile(from)
		os.MkdirAll(dir, 0o700)
		os.WriteFile(filepath.Join(dir, a.id+".jsonl"), data, 0o600)
	}
	if a.id == "" {
		a.id = c.sessionID
	}
	if a.id == "" {
		a.id = uuid.NewString()
	}
	a.transcript = filepath.Join(dir, a.id+".jsonl")
	return source
}

func configDir() string {
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".claude")
}

func projectKey(dir string) string {
	return regexp.MustCompile(`[^a-zA-Z0-9]`).ReplaceAllString(dir, "-")
}

func latest(dir string) (string, bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", false
	}
	type cand struct {
		id string
		t  time.Time
	}
	var cs []cand
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if fi, err := e.Info(); ok && err == nil {
			cs = append(cs, cand{id, fi.ModTime()})
		}
	}
	if len(cs) == 0 {
		return "", false
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].t.After(cs[j].t) })
	return cs[0].id, true
}

// loadHooks merges the hooks of every settings source Claude Code reads:
// the user's, the project's, and the last --settings (file or JSON).
func (a *agent) loadHooks() {
	a.hooks = map[string][]hookGroup{}
	if a.cli.bare {
		return
	}
	read := func(where string, data []byte) {
		var s struct {
			Hooks map[string][]hookGroup `json:"hooks"`
		}
		if err := json.Unmarshal(data, &s); err != nil {
			// Claude Code ignores a settings file it cannot read in -p.
			a.log.Write("settings_ignored", map[string]any{"where": where, "error": err.Error()})
			return
		}
		for ev, groups := range s.Hooks {
			a.hooks[ev] = append(a.hooks[ev], groups...)
		}
	}
	for _, p := range []string{filepath.Join(configDir(), "settings.json"), filepath.Join(a.cwd, ".claude", "settings.json"), filepath.Join(a.cwd, ".claude", "settings.local.json")} {
		if data, err := os.ReadFile(p); err == nil {
			read(p, data)
		}
	}
	if n := len(a.cli.settings); n > 0 {
		s := a.cli.settings[n-1]
		if strings.HasPrefix(strings.TrimSpace(s), "{") {
			read("--settings", []byte(s))
		} else if data, err := os.ReadFile(s); err == nil {
			read(s, data)
		} else {
			a.log.Write("settings_ignored", map[string]any{"where": s, "error": err.Error()})
		}
	}
}

func (a *agent) loadMCP() {
	for _, cfg := range a.cli.mcpConfigs {
		data := []byte(cfg)
		if !strings.HasPrefix(strings.TrimSpace(cfg), "{") {
			var err error
			if data, err = os.ReadFile(cfg); err != nil {
				a.log.Fail("Error: Invalid MCP configuration:\nMCP config file not found: %s", cfg)
			}
		}
		var v struct {
			MCPServers map[string]struct {
				Command string            `json:"command"`
				Args    []string          `json:"args"`
				Env     map[string]string `json:"env"`
			} `json:"mcpServers"`
		}
		if err := json.Unmarshal(data, &v); err != nil {
			a.log.Fail("Error: Invalid MCP configuration: %v", err)
		}
		for name, s := range v.MCPServers {
			a.mcp = append(a.mcp, fakeagent.MCPServer{Name: name, Command: s.Command, Args: s.Args, Env: s.Env})
		}
	}
}

// hook runs the hooks of event whose matcher matches subject, with the
// payload Claude Code gives them, and returns their outputs.
func (a *agent) hook(event, subject string, fields map[string]any) []string {
	payload := map[string]any{"session_id": a.id, "transcript_path": a.transcript, "cwd": a.cwd, "hook_event_name": event}
	if a.promptID != "" && event != "SessionStart" {
		payload["prompt_id"] = a.promptID
	}
	for k, v := range fields {
		payload[k] = v
	}
	data, _ := json.Marshal(payload)
	var outs []string
	for _, g := range a.hooks[event] {
		if !matches(g.Matcher, subject) {
			continue
		}
		for _, h := range g.Hooks {
			if h.Type != "command" {
				continue
			}
			timeout := 60 * time.Second
			if h.Timeout > 0 {
				timeout = time.Duration(h.Timeout * float64(time.Second))
			}
			out, _ := fakeagent.RunCommand(a.log, event, []string{"/bin/sh", "-c", h.Command}, data, a.cwd, timeout)
			outs = append(outs, out)
			a.context(event, out)
		}
	}
	return outs
}

// context logs the context a hook's output adds to the conversation.
func (a *agent) context(event, out string) {
	var v struct {
		Specific struct {
			Context string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if json.Unmarshal([]byte(out), &v) == nil && v.Specific.Context != "" {
		a.log.Write("context", map[string]any{"hook": event, "text": v.Specific.Context})
	}
}

func matches(matcher, subject string) bool {
	if matcher == "" || matcher == "*" {
		return true
	}
	re, err := regexp.Compile("^(?:" + matcher + ")$")
	return err == nil && re.MatchString(subject)
}

func (a *agent) line(v map[string]any) {
	u := uuid.NewString()
	v["uuid"], v["parentUuid"], v["timestamp"], v["sessionId"], v["cwd"], v["version"], v["isSidechain"] = u, a.parent, fakeagent.Now(), a.id, a.cwd, version, false
	if a.parent == "" {
		v["parentUuid"] = nil
	}
	a.parent = u
	if err := fakeagent.Append(a.transcript, v); err != nil {
		a.log.Fail("write transcript: %v", err)
	}
}

// assistant writes one model response with its usage, and checks the
// budget as --max-budget-usd does.
func (a *agent) assistant(content []map[string]any, stopReason string) {
	t := fakeagent.RequestTokens()
	a.line(map[string]any{"type": "assistant", "requestRef": uuid.NewString(), "message": map[string]any{
		"id": "msg_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:24], "type": "message", "role": "assistant", "model": "claude-stand-in",
		"content": content, "stop_reason": stopReason, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": t.Input, "cache_creation_input_tokens": t.CacheWrite, "cache_read_input_tokens": t.CacheRead, "output_tokens": t.Output},
	}})
	a.cost += fakeagent.CostPerRequest()
	if a.cli.print && a.cli.maxBudget > 0 && a.cost >= a.cli.maxBudget {
		a.log.Write("budget_exceeded", map[string]any{"cost_usd": a.cost, "max_budget_usd": a.cli.maxBudget})
		fmt.Fprintf(os.Stderr, "Error: Exceeded USD budget (%g)\n", a.cli.maxBudget)
		a.exit(1, "other")
	}
}

func (a *agent) do(s fakeagent.Step) {
	a.log.Write("step", map[string]any{"verb": s.Verb, "arg": s.Arg})
	switch s.Verb {
	case "prompt":
		text := s.Arg
		if text == "" {
			text = a.cli.prompt
		}
		if text == "" {
			text = "continue"
		}
		a.promptID = uuid.NewString()
		a.turns++
		a.hook("UserPromptSubmit", "", map[string]any{"permission_mode": "default", "prompt": text})
		a.line(map[string]any{"type": "user", "promptId": a.promptID, "message": map[string]any{"role": "user", "content": text}})
	case "tool", "ask":
		name := s.Arg
		if name == "" {
			name = "Bash"
		}
		id := "toolu_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:20]
		input := map[string]any{"command": "true", "description": "a step of the stand-in"}
		a.assistant([]map[string]any{{"type": "tool_use", "id": id, "name": name, "input": input}}, "tool_use")
		tool := map[string]any{"permission_mode": "default", "tool_name": name, "tool_input": input, "tool_use_id": id}
		a.hook("PreToolUse", name, tool)
		if s.Verb == "ask" {
			a.hook("PermissionRequest", name, map[string]any{"permission_mode": "default", "tool_name": name, "tool_input": input})
			a.hook("Notification", "permission_prompt", map[string]any{"message": "Claude needs your permission", "notification_type": "permission_prompt"})
			if !a.waitGrant() {
				a.exit(143, "other")
			}
			a.log.Write("granted", map[string]any{"tool": name})
		}
		post := map[string]any{"tool_response": map[string]any{"stdout": "", "stderr": "", "interrupted": false}, "duration_ms": 1}
		for k, v := range tool {
			post[k] = v
		}
		a.hook("PostToolUse", name, post)
		a.line(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": id, "content": ""}}}})
	case "stop":
		reply := s.Arg
		if reply == "" {
			reply = fmt.Sprintf("Done with turn %d.", a.turns)
		}
		a.reply(reply)
		outs := a.hook("Stop", "", map[string]any{"permission_mode": "default", "stop_hook_active": false, "last_assistant_message": reply, "background_tasks": []any{}, "session_crons": []any{}})
		for _, out := range outs {
			var v struct {
				Decision string `json:"decision"`
				Reason   string `json:"reason"`
			}
			if json.Unmarshal([]byte(out), &v) == nil && v.Decision == "block" {
				// Claude Code goes on with the reason as its prompt, once.
				a.log.Write("stop_blocked", map[string]any{"reason": v.Reason})
				a.reply("Continued: " + fakeagent.FirstLine(v.Reason))
				a.hook("Stop", "", map[string]any{"permission_mode": "default", "stop_hook_active": true, "last_assistant_message": a.lastReply, "background_tasks": []any{}, "session_crons": []any{}})
				break
			}
		}
		if a.cli.print {
			fmt.Println(a.lastReply)
		}
	case "reply":
		a.reply(s.Arg)
	case "limit":
		a.limit(s.Arg)
	case "input":
		// A prompt typed at its terminal: one line of stdin.
		text, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil {
			a.exit(1, "other")
		}
		text = strings.TrimSpace(text)
		a.log.Write("input", map[string]any{"text": text})
		a.promptID = uuid.NewString()
		a.turns++
		a.hook("UserPromptSubmit", "", map[string]any{"permission_mode": "default", "prompt": text})
		a.line(map[string]any{"type": "user", "promptId": a.promptID, "message": map[string]any{"role": "user", "content": text}})
	case "retry":
		a.retry(s.Arg)
	case "idle":
		a.hook("Notification", "idle_prompt", map[string]any{"message": "Claude is waiting for your input", "notification_type": "idle_prompt"})
	case "question":
		a.hook("Notification", "elicitation_dialog", map[string]any{"message": s.Arg, "notification_type": "elicitation_dialog"})
		if !fakeagent.WaitFile("answer", a.stop) {
			a.exit(143, "other")
		}
	case "compact":
		a.hook("PreCompact", "manual", map[string]any{"trigger": "manual", "custom_instructions": nil})
		a.hook("SessionStart", "compact", map[string]any{"source": "compact", "model": "claude-stand-in"})
	case "mcp":
		tool, args, _ := strings.Cut(s.Arg, ":")
		if len(a.mcp) == 0 {
			a.log.Write("mcp", map[string]any{"tool": tool, "error": "no MCP server configured"})
			return
		}
		server := a.mcp[0]
		for _, m := range a.mcp {
			if m.Name == "sessiond" {
				server = m
			}
		}
		a.clients.Call(server, tool, args)
	case "sleep":
		d, _ := time.ParseDuration(s.Arg)
		a.sleep(d)
	case "wait":
		if !fakeagent.WaitFile(s.Arg, a.stop) {
			a.exit(143, "other")
		}
	case "exit":
		code, _ := strconv.Atoi(s.Arg)
		a.exit(code, map[bool]string{true: "other", false: "prompt_input_exit"}[a.cli.print])
	case "crash":
		a.log.Write("crash", nil)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	case "hang":
		a.hang()
	default:
		a.log.Write("error", map[string]any{"message": "unknown step " + s.Verb})
	}
}

// limit is the turn failing at a usage limit, as Claude Code 2.1 shows
// it: the API error message in place of a reply (isApiErrorMessage), the
// StopFailure hook with its error and error_details, the message on
// stdout with -p. KIND is quota (the default; SECONDS is the time to the
// reset, default 30), spend or auth.
func (a *agent) limit(arg string) {
	kind, secs, _ := strings.Cut(arg, ":")
	n, err := strconv.Atoi(secs)
	if err != nil {
		n = 30
	}
	errName, text := "rate_limit", fmt.Sprintf("Claude AI usage limit reached|%d", time.Now().Add(time.Duration(n)*time.Second).Unix())
	switch kind {
	case "spend":
		errName, text = "billing_error", "Credit balance is too low"
	case "auth":
		errName, text = "authentication_failed", "Invalid API key · Please run /login"
	case "throttle":
		errName, text = "rate_limit", "API Error: Rate limit reached"
	}
	a.line(map[string]any{"type": "assistant", "isApiErrorMessage": true, "message": map[string]any{
		"id": uuid.NewString(), "type": "message", "role": "assistant", "model": "<synthetic>",
		"content": []map[string]any{{"type": "text", "text": text}}, "stop_reason": "stop_sequence",
		"usage": map[string]any{"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}})
	a.hook("StopFailure", errName, map[string]any{"permission_mode": "default", "error": errName, "error_details": text, "last_assistant_message": text})
	if a.cli.print {
		fmt.Println(text)
	}
}

// retry is a spell of failed requests that Claude Code retries: COUNT
// api_error records (529 Overloaded), INTERVAL apart (default 1s).
func (a *agent) retry(arg string) {
	count, every, _ := strings.Cut(arg, ":")
	n, err := strconv.Atoi(count)
	if err != nil {
		n = 3
	}
	d, err := time.ParseDuration(every)
	if err != nil {
		d = time.Second
	}
	for i := 1; i <= n; i++ {
		a.line(map[string]any{"type": "system", "subtype": "api_error", "level": "error",
			"error":     map[string]any{"message": `529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "status": 529, "formatted": "529 Overloaded"},
			"retryInMs": d.Milliseconds(), "retryAttempt": i, "maxRetries": 10})
		a.sleep(d)
	}
}

// waitGrant waits for the permission: the file $FAKEAGENT_DIR/grant, or,
// on a terminal, the key of its dialog's first two choices (1 or 2, no
// Enter: the dialog reads keys, as Claude Code's does).
func (a *agent) waitGrant() bool {
	keyed := make(chan struct{})
	if fd := int(os.Stdin.Fd()); term.IsTerminal(fd) {
		if old, err := term.MakeRaw(fd); err == nil {
			defer term.Restore(fd, old)
			go func() {
				b := make([]byte, 1)
				for {
					if n, err := os.Stdin.Read(b); err != nil || n == 1 && (b[0] == '1' || b[0] == '2') {
						if err == nil {
							close(keyed)
						}
						return
					}
				}
			}()
		}
	}
	granted := make(chan bool, 1)
	go func() { granted <- fakeagent.WaitFile("grant", a.stop) }()
	select {
	case <-keyed:
		return true
	case ok := <-granted:
		return ok
	}
}

func (a *agent) reply(text string) {
	if text == "" {
		text = "Working on it."
	}
	a.lastReply = text
	a.assistant([]map[string]any{{"type": "text", "text": text}}, "end_turn")
}

func (a *agent) sleep(d time.Duration) {
	select {
	case <-time.After(d):
	case <-a.stop:
		a.exit(143, "other")
	}
}

// hang waits for the next prompt, which never comes: until a signal.
func (a *agent) hang() {
	a.log.Write("waiting", nil)
	<-a.stop
	a.exit(143, "other")
}

// exit ends as Claude Code does: the cost record, SessionEnd, the code.
func (a *agent) exit(code int, reason string) {
	a.line(map[string]any{"type": "cost-state", "totalCostUSD": a.cost})
	a.hook("SessionEnd", reason, map[string]any{"reason": reason})
	a.clients.Close()
	a.log.Write("exit", map[string]any{"code": code, "cost_usd": a.cost})
	os.Exit(code)
}

// lastCost is the conversation's cost so far: its last cost-state record.
func lastCost(transcript string) float64 {
	data, err := os.ReadFile(transcript)
	if errors.Is(err, fs.ErrNotExist) || err != nil {
		return 0
	}
	cost := 0.0
	for _, line := range strings.Split(string(data), "\n") {
		var v struct {
			Type string  `json:"type"`
			Cost float64 `json:"totalCostUSD"`
		}
		if json.Unmarshal([]byte(line), &v) == nil && v.Type == "cost-state" {
			cost = v.Cost
		}
	}
	return cost
}
