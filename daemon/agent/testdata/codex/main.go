// Command codex is a stand-in for Codex CLI 0.169 in tests: it takes the
// real CLI's command line (exec, resume, -c overrides), writes a rollout
// file under $CODEX_HOME/sessions with token_count events where the real one
// does, runs the notify program with the agent-turn-complete payload at the
// end of each turn, resumes a conversation by id or --last, starts the MCP
// servers of -c mcp_servers.* with only the environment they are given, and
// does it all offline, on the script FAKEAGENT_SCRIPT gives (see
// ../fakeagent/README.md).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/google/uuid"
	"github.com/sessiond/sessiond/daemon/agent/testdata/fakeagent"
)

var valueOptions = map[string]bool{
	"-c": true, "--config": true, "--enable": true, "--disable": true, "-m": true, "--model": true, "-p": true, "--profile": true,
	"-s": true, "--sandbox": true, "-C": true, "--cd": true, "--add-dir": true, "-a": true, "--ask-for-approval": true,
	"--color": true, "-o": true, "--output-last-message": true, "--output-schema": true, "--local-provider": true, "--thread-source": true,
}

type cli struct {
	exec        bool
	resume      bool
	last        bool
	id          string
	prompt      string
	overrides   []string
	subcommand  string
	version     bool
	positionals []string
}

func parse(args []string) cli {
	var c cli
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			c.positionals = append(c.positionals, args[i+1:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' {
			name, value, inline := a, "", false
			if k := strings.IndexByte(a, '='); k > 0 && strings.HasPrefix(a, "--") {
				name, value, inline = a[:k], a[k+1:], true
			}
			if valueOptions[name] && !inline && i+1 < len(args) {
				i++
				value = args[i]
			}
			switch name {
			case "-c", "--config":
				c.overrides = append(c.overrides, value)
			case "--last":
				c.last = true
			case "-V", "--version":
				c.version = true
			}
			continue
		}
		switch {
		case len(c.positionals) == 0 && !c.exec && !c.resume && (a == "exec" || a == "e"):
			c.exec = true
		case len(c.positionals) == 0 && !c.resume && (a == "resume" || a == "fork"):
			c.resume = true
		case len(c.positionals) == 0 && !c.exec && !c.resume && c.subcommand == "" && isSubcommand(a):
			c.subcommand = a
		default:
			c.positionals = append(c.positionals, a)
		}
	}
	p := c.positionals
	if c.resume && !c.last && len(p) > 0 {
		c.id, p = p[0], p[1:]
	}
	if len(p) > 0 {
		c.prompt = p[0]
	}
	return c
}

func isSubcommand(a string) bool {
	switch a {
	case "login", "logout", "mcp", "apply", "completion", "doctor", "features", "review", "help":
		return true
	}
	return false
}

type agent struct {
	log      *fakeagent.Log
	cli      cli
	cwd      string
	home     string
	id       string
	rollout  string
	notify   []string
	mcp      []fakeagent.MCPServer
	clients  *fakeagent.MCPClients
	prompts  []string
	total    fakeagent.Tokens
	turnID   string
	reply    string
	stop     chan os.Signal
	headless bool
}

func main() {
	log := fakeagent.NewLog("codex")
	c := parse(os.Args[1:])
	if c.version {
		fmt.Println("codex-cli 0.169.0")
		return
	}
	if c.subcommand != "" {
		log.Write("subcommand", map[string]any{"argv": os.Args})
		return
	}
	cwd, _ := os.Getwd()
	// Codex gives an MCP server only the environment it is told to.
	a := &agent{log: log, cli: c, cwd: cwd, home: codexHome(), stop: fakeagent.Signals(), headless: c.exec, clients: fakeagent.NewMCPClients(log, false)}
	a.config()
	a.thread()
	log.Write("start", map[string]any{"argv": os.Args, "conversation_id": a.id, "transcript": a.rollout, "exec": c.exec,
		"notify": a.notify, "mcp_servers": len(a.mcp)})
	def := "hang"
	switch {
	case c.exec:
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
	if c.exec {
		a.exit(0)
	}
	a.hang()
}

func codexHome() string {
	if d := os.Getenv("CODEX_HOME"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".codex")
}

// config reads notify and mcp_servers from config.toml, then the -c
// overrides, which win.
func (a *agent) config() {
	var base struct {
		Notify     []string                  `toml:"notify"`
		MCPServers map[string]mcpServerTable `toml:"mcp_servers"`
	}
	if data, err := os.ReadFile(filepath.Join(a.home, "config.toml")); err == nil {
		if _, err := toml.Decode(string(data), &base); err != nil {
			a.log.Fail("Error loading config.toml: %v", err)
		}
	}
	a.notify = base.Notify
	servers := base.MCPServers
	if servers == nil {
		servers = map[string]mcpServerTable{}
	}
	for _, kv := range a.cli.overrides {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		switch {
		case k == "notify":
			var n struct{ Notify []string }
			if _, err := toml.Decode("notify = "+v, &n); err != nil {
				a.log.Fail("Error: invalid -c notify=%s: %v", v, err)
			}
			a.notify = n.Notify
		case strings.HasPrefix(k, "mcp_servers."):
			name := strings.TrimPrefix(k, "mcp_servers.")
			var t struct{ S mcpServerTable }
			if _, err := toml.Decode("S = "+v, &t); err != nil {
				a.log.Fail("Error: invalid -c %s: %v", k, err)
			}
			servers[name] = t.S
		}
	}
	for name, s := range servers {
		a.mcp = append(a.mcp, fakeagent.MCPServer{Name: name, Command: s.Command, Args: s.Args, Env: s.Env})
	}
	sort.Slice(a.mcp, func(i, j int) bool { return a.mcp[i].Name < a.mcp[j].Name })
}

type mcpServerTable struct {
	Command string            `toml:"command"`
	Args    []string          `toml:"args"`
	Env     map[string]string `toml:"env"`
}

// thread starts a new rollout or finds the one to resume, failing as Codex
// does.
func (a *agent) thread() {
	if a.cli.resume {
		path, ok := a.find()
		if !ok {
			what := "--last"
			if a.cli.id != "" {
				what = a.cli.id
			}
			a.log.Fail("Error: thread/resume: thread/resume failed: no rollout found for thread id %s (code -32600)", what)
		}
		a.rollout = path
		a.readRollout()
		return
	}
	u, _ := uuid.NewV7()
	a.id = u.String()
	now := time.Now()
	dir := filepath.Join(a.home, "sessions", now.Format("2006"), now.Format("01"), now.Format("02"))
	a.rollout = filepath.Join(dir, "rollout-"+now.Format("2006-01-02T15-04-05")+"-"+a.id+".jsonl")
	originator := "codex_cli_rs"
	if a.headless {
		originator = "codex_exec"
	}
	a.write(map[string]any{"timestamp": fakeagent.Now(), "type": "session_meta", "payload": map[string]any{
		"session_id": a.id, "id": a.id, "timestamp": fakeagent.Now(), "cwd": a.cwd, "originator": originator, "cli_version": "0.169.0",
		"base_instructions": map[string]any{"text": "You are the Codex stand-in."}}})
}

func (a *agent) find() (string, bool) {
	paths, _ := filepath.Glob(filepath.Join(a.home, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	var best string
	var bestTime time.Time
	for _, p := range paths {
		if a.cli.id != "" {
			if strings.HasSuffix(p, "-"+a.cli.id+".jsonl") {
				return p, true
			}
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.ModTime().After(bestTime) && a.metaCwd(p) == a.cwd {
			best, bestTime = p, fi.ModTime()
		}
	}
	return best, best != ""
}

func (a *agent) metaCwd(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, _ := bufio.NewReaderSize(f, 1<<20).ReadString('\n')
	var m struct {
		Payload struct {
			Cwd string `json:"cwd"`
		} `json:"payload"`
	}
	json.Unmarshal([]byte(line), &m)
	return m.Payload.Cwd
}

// readRollout takes the thread's id, prompts and token total from it.
func (a *agent) readRollout() {
	data, err := os.ReadFile(a.rollout)
	if err != nil {
		a.log.Fail("Error: read %s: %v", a.rollout, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		var v struct {
			Type    string `json:"type"`
			Payload struct {
				Type    string `json:"type"`
				ID      string `json:"id"`
				Role    string `json:"role"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				Info *struct {
					Total struct {
						Input      int64 `json:"input_tokens"`
						Cached     int64 `json:"cached_input_tokens"`
						CacheWrite int64 `json:"cache_write_input_tokens"`
						Output     int64 `json:"output_tokens"`
					} `json:"total_token_usage"`
				} `json:"info"`
			} `json:"payload"`
		}
		if json.Unmarshal([]byte(line), &v) != nil {
			continue
		}
		switch {
		case v.Type == "session_meta":
			a.id = v.Payload.ID
		case v.Type == "response_item" && v.Payload.Role == "user" && len(v.Payload.Content) > 0:
			a.prompts = append(a.prompts, v.Payload.Content[0].Text)
		case v.Type == "event_msg" && v.Payload.Type == "token_count" && v.Payload.Info != nil:
			t := v.Payload.Info.Total
			a.total = fakeagent.Tokens{Input: t.Input - t.Cached, Output: t.Output, CacheRead: t.Cached, CacheWrite: t.CacheWrite}
		}
	}
}

func (a *agent) write(v map[string]any) {
	if err := fakeagent.Append(a.rollout, v); err != nil {
		a.log.Fail("write rollout: %v", err)
	}
}

func (a *agent) event(payload map[string]any) {
	a.write(map[string]any{"timestamp": fakeagent.Now(), "type": "event_msg", "payload": payload})
}

func (a *agent) item(payload map[string]any) {
	a.write(map[string]any{"timestamp": fakeagent.Now(), "type": "response_item", "payload": payload})
}

// request counts one model request's tokens, as a token_count event.
func (a *agent) request() {
	t := fakeagent.RequestTokens()
	a.total = fakeagent.Tokens{Input: a.total.Input + t.Input, Output: a.total.Output + t.Output, CacheRead: a.total.CacheRead + t.CacheRead, CacheWrite: a.total.CacheWrite + t.CacheWrite}
	usage := func(x fakeagent.Tokens) map[string]any {
		return map[string]any{"input_tokens": x.Input + x.CacheRead, "cached_input_tokens": x.CacheRead, "cache_write_input_tokens": x.CacheWrite,
			"output_tokens": x.Output, "reasoning_output_tokens": 0, "total_tokens": x.Input + x.CacheRead + x.Output}
	}
	a.event(map[string]any{"type": "token_count", "info": map[string]any{"total_token_usage": usage(a.total), "last_token_usage": usage(t), "model_context_window": 258400}, "rate_limits": nil})
}

// limit is the turn failing at the account's usage limit, as Codex 0.169
// tells it: the API's usage_limit_reached error (resets_in_seconds) in an
// error event of the rollout and of --json, and its message on stderr.
// SECONDS is the time to the reset (default 30).
func (a *agent) limit(arg string) {
	n, err := strconv.Atoi(arg)
	if err != nil {
		n = 30
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"type": "usage_limit_reached", "message": "The usage limit has been reached",
		"plan_type": "plus", "resets_in_seconds": n}})
	a.event(map[string]any{"type": "error", "message": string(body)})
	if a.headless {
		line, _ := json.Marshal(map[string]any{"type": "error", "message": string(body)})
		fmt.Println(string(line))
	}
	fmt.Fprintf(os.Stderr, "ERROR: You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again in %d seconds.\n", n)
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
		u, _ := uuid.NewV7()
		a.turnID = u.String()
		a.prompts = append(a.prompts, text)
		a.write(map[string]any{"timestamp": fakeagent.Now(), "type": "turn_context", "payload": map[string]any{"cwd": a.cwd, "approval_policy": "on-request", "model": "gpt-5-codex", "summary": "auto"}})
		a.event(map[string]any{"type": "task_started", "turn_id": a.turnID, "model_context_window": 258400})
		a.item(map[string]any{"type": "message", "role": "user", "content": []map[string]any{{"type": "input_text", "text": text}}})
	case "tool", "ask":
		call := "call_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:20]
		a.item(map[string]any{"type": "function_call", "name": "exec_command", "arguments": `{"cmd":"true"}`, "call_id": call})
		a.request()
		if s.Verb == "ask" {
			// Codex's notify says nothing of approvals; the stand-in waits.
			if !fakeagent.WaitFile("grant", a.stop) {
				a.exit(143)
			}
			a.log.Write("granted", nil)
		}
		a.item(map[string]any{"type": "function_call_output", "call_id": call, "output": ""})
	case "stop":
		reply := s.Arg
		if reply == "" {
			reply = fmt.Sprintf("Done with turn %d.", len(a.prompts))
		}
		a.reply = reply
		a.item(map[string]any{"type": "message", "role": "assistant", "content": []map[string]any{{"type": "output_text", "text": reply}}})
		a.request()
		a.event(map[string]any{"type": "task_complete", "turn_id": a.turnID, "last_agent_message": reply})
		a.notifyTurn()
		if a.headless {
			fmt.Println(reply)
		}
	case "abort":
		a.event(map[string]any{"type": "turn_aborted", "turn_id": a.turnID, "reason": "interrupted"})
	case "limit":
		a.limit(s.Arg)
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
			a.exit(143)
		}
	case "exit":
		code, _ := strconv.Atoi(s.Arg)
		a.exit(code)
	case "crash":
		a.log.Write("crash", nil)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	case "hang":
		a.hang()
	default:
		a.log.Write("error", map[string]any{"message": "unknown step " + s.Verb})
	}
}

// notifyTurn runs the notify program with the JSON payload as its last
// argument, as Codex does at the end of each turn.
func (a *agent) notifyTurn() {
	if len(a.notify) == 0 {
		return
	}
	client := "codex-tui"
	if a.headless {
		client = "codex_exec"
	}
	payload, _ := json.Marshal(map[string]any{"type": "agent-turn-complete", "thread-id": a.id, "turn-id": a.turnID, "cwd": a.cwd,
		"client": client, "input-messages": a.prompts, "last-assistant-message": a.reply})
	argv := append(append([]string(nil), a.notify...), string(payload))
	fakeagent.RunCommand(a.log, "notify", argv, nil, a.cwd, 30*time.Second)
}

func (a *agent) sleep(d time.Duration) {
	select {
	case <-time.After(d):
	case <-a.stop:
		a.exit(143)
	}
}

func (a *agent) hang() {
	a.log.Write("waiting", nil)
	<-a.stop
	a.exit(143)
}

func (a *agent) exit(code int) {
	a.clients.Close()
	a.log.Write("exit", map[string]any{"code": code})
	os.Exit(code)
}
