package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ClaudeCode is the adapter of Anthropic's Claude Code CLI (`claude`),
// written against version 2.1.328.
var ClaudeCode Adapter = claudeCode{}

func init() { register(ClaudeCode, "claude") }

type claudeCode struct{}

// Files Prepare writes in the session's directory.
const (
	ClaudeSettingsFile = "claude-settings.json"
	ClaudeMCPFile      = "claude-mcp.json"
)

// MCPServerName is the name sessiond's MCP server has in an agent's
// configuration; its tools reach the model as mcp__sessiond__<tool>.
const MCPServerName = "sessiond"

// claudeHookEvents are the hooks sessiond installs, in the order Claude Code
// documents them. PermissionRequest comes at once when a permission dialog
// opens (the Notification about it only some seconds later); PostToolUse
// says work goes on once a permission was granted, and is the event whose
// output carries the warning into the conversation.
var claudeHookEvents = []string{
	"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest",
	"PostToolUse", "Notification", "Stop", "StopFailure", "PreCompact", "SessionEnd",
}

// claudeToolEvents take a tool matcher.
var claudeToolEvents = map[string]bool{"PreToolUse": true, "PermissionRequest": true, "PostToolUse": true}

// claudeHookTimeout bounds each hook run, in seconds: a hook that hangs
// must not hold the agent up for Claude Code's default of ten minutes.
const claudeHookTimeout = 10

// claudeGrammar is Claude Code's command line (commander), as `claude
// --help` lists it.
var claudeGrammar = cliGrammar{
	options: map[string]valueKind{
		"--agent": oneValue, "--agents": oneValue, "--append-system-prompt": oneValue,
		"--append-system-prompt-file": oneValue, "--autocompact": oneValue, "--debug-file": oneValue,
		"--effort": oneValue, "--environment": oneValue, "--fallback-model": oneValue,
		"--input-format": oneValue, "--json-schema": oneValue, "--max-budget-usd": oneValue,
		"--max-turns": oneValue, "--model": oneValue, "-n": oneValue, "--name": oneValue,
		"--output-format": oneValue, "--permission-mode": oneValue, "--permission-prompts": oneValue,
		"--permission-prompt-tool": oneValue, "--plugin-dir": oneValue, "--plugin-url": oneValue,
		"--remote-control-session-name-prefix": oneValue, "--session-id": oneValue,
		"--setting-sources": oneValue, "--settings": oneValue, "--system-prompt": oneValue,
		"--system-prompt-file": oneValue, "--system-prompt-snapshot": oneValue,

		"--cloud": optionalValue, "-d": optionalValue, "--debug": optionalValue, "--from-pr": optionalValue,
		"--prompt-suggestions": optionalValue, "--remote-control": optionalValue, "-r": optionalValue,
		"--resume": optionalValue, "--teleport": optionalValue, "-w": optionalValue, "--worktree": optionalValue,

		"--add-dir": manyValues, "--allowedTools": manyValues, "--allowed-tools": manyValues,
		"--betas": manyValues, "--disallowedTools": manyValues, "--disallowed-tools": manyValues,
		"--file": manyValues, "--mcp-config": manyValues, "--tools": manyValues,
	},
	subcommands: map[string]bool{
		"agents": true, "attach": true, "auth": true, "auto-mode": true, "doctor": true, "gateway": true,
		"import": true, "install": true, "logs": true, "mcp": true, "plugin": true, "plugins": true,
		"purge": true, "respawn": true, "rm": true, "setup-token": true, "stop": true, "kill": true,
		"ultrareview": true, "update": true, "upgrade": true,
	},
}

// claudeResumeOptions choose or fork the conversation; Resume replaces them.
var claudeResumeOptions = []string{"--session-id", "-r", "--resume", "-c", "--continue", "--fork-session", "--from-pr", "--teleport"}

func (claudeCode) Name() string { return "claude-code" }

// claudeCommand is a claude command line read with claudeGrammar.
type claudeCommand struct {
	args       []string
	scan       cliScan
	subcommand string
}

func parseClaude(argv []string) claudeCommand {
	c := claudeCommand{args: argv[1:]}
	c.scan = claudeGrammar.scan(c.args, false)
	if len(c.scan.Positionals) > 0 {
		if first := c.args[c.scan.Positionals[0]]; claudeGrammar.subcommands[first] {
			c.subcommand = first
		}
	}
	return c
}

// session is whether the command line runs an agent session at all (not a
// subcommand, --help or --version).
func (c claudeCommand) session() bool {
	return c.subcommand == "" && !c.scan.has("-h", "--help", "-v", "--version")
}

func (c claudeCommand) print() bool { return c.scan.has("-p", "--print") }

func (claudeCode) Interactive(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	c := parseClaude(argv)
	return c.session() && !c.print()
}

func (a claudeCode) Prepare(ctx context.Context, l Launch) (Plan, error) {
	if err := checkLaunch(l); err != nil {
		return Plan{}, err
	}
	p := Plan{Agent: a.Name(), Argv: slices.Clone(l.Argv), InitialState: StateUnknown}
	c := parseClaude(l.Argv)
	if !c.session() {
		what := "--help or --version"
		if c.subcommand != "" {
			what = "claude " + c.subcommand
		}
		p.Notices = append(p.Notices, fmt.Sprintf("%s is not an agent session: it runs as it is", what))
		return p, nil
	}
	argv := slices.Clone(l.Argv)
	if l.Resume != "" {
		id, err := ParseConversationID(l.Resume)
		var conv Conversation
		if err == nil {
			conv, err = a.Locate(ctx, Query{ConversationID: id, ProjectDir: l.ProjectDir, Env: l.Env})
		}
		if err != nil {
			p.Notices = append(p.Notices, fmt.Sprintf("conversation %s is not resumed (%v): a new conversation starts", cutText(l.Resume, 64), err))
		} else {
			argv, _ = a.Resume(argv, id)
			c = parseClaude(argv)
			p.Resumed, p.ConversationID, p.TranscriptPath = true, id, conv.TranscriptPath
		}
	}
	print := c.print()
	p.Interactive = l.TTY && !print

	var front []string
	if !p.Resumed {
		switch {
		case c.scan.has("--session-id"):
			o, _ := c.scan.last("--session-id")
			id, err := ParseConversationID(firstValue(o))
			if err != nil {
				p.Notices = append(p.Notices, fmt.Sprintf("--session-id: %v (Claude Code will refuse it)", err))
			}
			p.ConversationID = id
		case c.scan.has("-r", "--resume", "-c", "--continue", "--from-pr", "--teleport"):
			// The agent picks the conversation; its SessionStart hook
			// says which. A --resume by id (not forked) is known now; a
			// --resume by session name is not an id.
			if o, ok := c.scan.last("-r", "--resume"); ok && !c.scan.has("--fork-session") {
				if id, err := ParseConversationID(firstValue(o)); err == nil {
					p.ConversationID = id
				}
			}
		default:
			p.ConversationID = NewConversationID()
			front = append(front, "--session-id", p.ConversationID)
		}
	}
	if p.ConversationID != "" && p.TranscriptPath == "" {
		p.TranscriptPath = claudeTranscriptPath(l.Env, l.ProjectDir, p.ConversationID)
	}

	args := c.args
	settings, err := claudeUserSettings(c, l.ProjectDir, filesOr(l.Files))
	if err != nil {
		p.Notices = append(p.Notices, fmt.Sprintf("sessiond's hooks are left out: %v", err))
	} else {
		path, err := writeSessionFile(l, ClaudeSettingsFile, claudeSettings(settings, l.Sessionctl))
		if err != nil {
			return Plan{}, err
		}
		p.Files = append(p.Files, path)
		p.AutoContinue = claudeWatchdog(settings)
		args = c.scan.without(args, "--settings")
		front = append([]string{"--settings", path}, front...)
		p.Integrated = true
	}
	if l.MCP {
		path, err := writeSessionFile(l, ClaudeMCPFile, claudeMCPConfig(l))
		if err != nil {
			return Plan{}, err
		}
		p.Files = append(p.Files, path)
		// --mcp-config takes every value up to the next option, so a prompt
		// after "--mcp-config FILE" would be read as a second file; in the
		// --mcp-config=FILE form it takes that one value only.
		front = append([]string{"--mcp-config=" + path}, front...)
	}
	if print && l.Budget.MaxCostUSD > 0 && !c.scan.has("--max-budget-usd") {
		front = append(front, "--max-budget-usd", strconv.FormatFloat(l.Budget.MaxCostUSD, 'f', -1, 64))
	}
	if c.scan.has("--bare", "--safe-mode") {
		p.Integrated = false
		p.Notices = append(p.Notices, "--bare and --safe-mode turn Claude Code's hooks off: sessiond will not know the agent's state")
	}
	if c.scan.has("--no-session-persistence") {
		p.TranscriptPath = ""
		p.Notices = append(p.Notices, "--no-session-persistence: Claude Code keeps no transcript, so its token use is not known and the conversation cannot be resumed")
	}
	p.Argv = append(append([]string{argv[0]}, front...), args...)

	switch {
	case !p.Integrated:
		p.InitialState = StateUnknown
	case !p.Interactive || len(c.scan.Positionals) > 0:
		p.InitialState = StateWorking
	default:
		p.InitialState, p.InitialWaiting = StateWaiting, WaitPrompt
	}
	return p, nil
}

func firstValue(o cliOption) string {
	if len(o.Values) == 0 {
		return ""
	}
	return o.Values[0]
}

func (claudeCode) Resume(argv []string, conversationID string) ([]string, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("%w: no command", ErrNotResumable)
	}
	id, err := ParseConversationID(conversationID)
	if err != nil {
		return nil, err
	}
	c := parseClaude(argv)
	if !c.session() {
		return nil, fmt.Errorf("%w: claude %s is not an agent session", ErrNotResumable, c.subcommand)
	}
	rest := c.scan.without(c.args, claudeResumeOptions...)
	return append([]string{argv[0], "--resume", id}, rest...), nil
}

// claudeUserSettings reads the user's own --settings (a file, or JSON given
// inline), which sessiond's settings file must include: Claude Code keeps
// only the last --settings it is given. No --settings is an empty object.
func claudeUserSettings(c claudeCommand, projectDir string, files FS) (map[string]any, error) {
	o, ok := c.scan.last("--settings")
	if !ok {
		return map[string]any{}, nil
	}
	v := strings.TrimSpace(firstValue(o))
	data, where := []byte(v), "--settings JSON"
	if !strings.HasPrefix(v, "{") {
		path := v
		if !filepath.IsAbs(path) {
			path = filepath.Join(projectDir, path)
		}
		where = "--settings " + path
		var err error
		if data, err = files.ReadFile(path, 1<<20); err != nil {
			return nil, fmt.Errorf("read %s: %w", where, err)
		}
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		if err == nil {
			err = errors.New("not an object")
		}
		return nil, fmt.Errorf("%s is not a JSON object (%v): it is passed on as it is", where, err)
	}
	if h, ok := m["hooks"]; ok {
		if _, ok := h.(map[string]any); !ok && h != nil {
			return nil, fmt.Errorf("%s: \"hooks\" is not an object: it is passed on as it is", where)
		}
	}
	return m, nil
}

// claudeWatchdog reports whether the user's settings turn on Claude Code's
// own wait through rate limits: CLAUDE_CODE_RETRY_WATCHDOG in their env.
func claudeWatchdog(settings map[string]any) bool {
	env, _ := settings["env"].(map[string]any)
	v, _ := env["CLAUDE_CODE_RETRY_WATCHDOG"].(string)
	return v != "" && v != "0" && v != "false"
}

// claudeSettings is the user's settings with sessiond's hooks added after
// theirs, event by event.
func claudeSettings(user map[string]any, sessionctl string) map[string]any {
	out := make(map[string]any, len(user)+1)
	for k, v := range user {
		out[k] = v
	}
	hooks := map[string]any{}
	if h, ok := user["hooks"].(map[string]any); ok {
		for k, v := range h {
			hooks[k] = v
		}
	}
	command := shellQuote(sessionctl) + " hook claude-code"
	for _, ev := range claudeHookEvents {
		group := map[string]any{
			"hooks": []any{map[string]any{"type": "command", "command": command, "timeout": claudeHookTimeout}},
		}
		if claudeToolEvents[ev] {
			group["matcher"] = "*"
		}
		list, _ := hooks[ev].([]any)
		hooks[ev] = append(slices.Clone(list), group)
	}
	out["hooks"] = hooks
	return out
}

// claudeMCPConfig is the --mcp-config file: one stdio server running
// `sessionctl mcp`. Claude Code passes its environment on to the server, so
// the session's id and socket reach it; they are set here too, so that the
// file says which session it serves.
func claudeMCPConfig(l Launch) map[string]any {
	return map[string]any{"mcpServers": map[string]any{MCPServerName: mcpServerEntry(l)}}
}

// mcpServerEntry is sessiond's MCP server as agents configure one.
func mcpServerEntry(l Launch) map[string]any {
	env := map[string]any{"SESSIOND_SESSION_ID": l.SessionID}
	if l.Socket != "" {
		env["SESSIOND_SOCKET"] = l.Socket
	}
	return map[string]any{"type": "stdio", "command": l.Sessionctl, "args": []any{"mcp"}, "env": env}
}

// claudeConfigDir is where Claude Code keeps its state: CLAUDE_CONFIG_DIR,
// else ~/.claude.
func claudeConfigDir(env []string) string {
	if d := lookupEnv(env, "CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	return filepath.Join(homeDir(env), ".claude")
}

// claudeProjectKey is the directory name Claude Code gives a project under
// projects/: the path with every character that is not a letter or a digit
// made "-". (Very long paths are shortened further; Locate looks for those.)
func claudeProjectKey(dir string) string {
	b := []byte(dir)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

// claudeTranscriptPath is where Claude Code writes conversation id of a
// session run in projectDir.
func claudeTranscriptPath(env []string, projectDir, id string) string {
	if projectDir == "" {
		return ""
	}
	return filepath.Join(claudeConfigDir(env), "projects", claudeProjectKey(projectDir), id+".jsonl")
}

func (claudeCode) Locate(ctx context.Context, q Query) (Conversation, error) {
	files := filesOr(q.Files)
	projects := filepath.Join(claudeConfigDir(q.Env), "projects")
	if q.ConversationID != "" {
		id, err := ParseConversationID(q.ConversationID)
		if err != nil {
			return Conversation{}, err
		}
		if p := claudeTranscriptPath(q.Env, q.ProjectDir, id); p != "" && isRegular(files, p) {
			return Conversation{ID: id, TranscriptPath: p}, nil
		}
		entries, err := files.ReadDir(projects, maxListed)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return Conversation{}, fmt.Errorf("look for conversation %s: %w", id, err)
		}
		for _, e := range entries {
			if err := ctx.Err(); err != nil {
				return Conversation{}, err
			}
			if p := filepath.Join(projects, e.Name(), id+".jsonl"); e.IsDir() && isRegular(files, p) {
				return Conversation{ID: id, TranscriptPath: p}, nil
			}
		}
		return Conversation{}, fmt.Errorf("%w: no transcript of conversation %s under %s", ErrNoConversation, id, projects)
	}
	if q.ProjectDir == "" {
		return Conversation{}, fmt.Errorf("%w: neither a conversation id nor a project to look in", ErrNoConversation)
	}
	dir := filepath.Join(projects, claudeProjectKey(q.ProjectDir))
	entries, err := files.ReadDir(dir, maxListed)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Conversation{}, fmt.Errorf("look for conversations in %s: %w", dir, err)
	}
	var found []Conversation
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok || e.IsDir() {
			continue
		}
		id, err := ParseConversationID(id)
		if err != nil {
			continue
		}
		if !e.Mode().IsRegular() || e.ModTime().Before(q.Since) {
			continue
		}
		found = append(found, Conversation{ID: id, TranscriptPath: filepath.Join(dir, e.Name())})
	}
	return oneConversation(found, dir, q)
}

// oneConversation is the result of a search by project and time.
func oneConversation(found []Conversation, where string, q Query) (Conversation, error) {
	switch len(found) {
	case 0:
		return Conversation{}, fmt.Errorf("%w: none in %s since %s", ErrNoConversation, where, q.Since.Format("2006-01-02T15:04:05Z07:00"))
	case 1:
		return found[0], nil
	}
	ids := make([]string, len(found))
	for i, c := range found {
		ids[i] = c.ID
	}
	return Conversation{}, fmt.Errorf("%w: %s in %s", ErrAmbiguousConversation, strings.Join(ids, ", "), where)
}

func isRegular(files FS, path string) bool {
	fi, err := files.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// ParseHook reads the JSON that Claude Code writes to a hook's stdin.
// claudeBulkyMembers are the members of a tool event that can be large and
// after which it carries nothing sessiond reads.
var claudeBulkyMembers = map[string]bool{"tool_response": true}

func (a claudeCode) ParseHook(payload []byte, interactive bool) (Event, error) {
	var f struct {
		sessionID, transcript, cwd, event, source, prompt, promptID   string
		tool, notificationType, message, reason, lastMessage, trigger string
		errName, errDetails                                           string
	}
	complete, err := readMembers(payload, map[string]*string{
		"session_id": &f.sessionID, "transcript_path": &f.transcript, "cwd": &f.cwd,
		"hook_event_name": &f.event, "source": &f.source, "prompt": &f.prompt, "prompt_id": &f.promptID,
		"tool_name": &f.tool, "notification_type": &f.notificationType, "message": &f.message,
		"reason": &f.reason, "last_assistant_message": &f.lastMessage, "trigger": &f.trigger,
		"error": &f.errName, "error_details": &f.errDetails,
	}, claudeBulkyMembers, func() bool {
		return f.event != "" && f.tool != "" && f.sessionID != "" && f.transcript != "" && f.cwd != ""
	})
	if err != nil {
		return Event{}, err
	}
	if f.event == "" {
		if !complete {
			return Event{}, fmt.Errorf("%w: cut short before hook_event_name", ErrBadPayload)
		}
		return Event{}, fmt.Errorf("%w: no hook_event_name", ErrBadPayload)
	}
	ev := Event{Agent: a.Name(), Hook: cutText(f.event, 64), Cwd: f.cwd}
	if !complete {
		ev.Notices = append(ev.Notices, "the hook payload was cut short; read up to the cut")
	}
	if f.sessionID != "" {
		if id, err := ParseConversationID(f.sessionID); err != nil {
			ev.Notices = append(ev.Notices, fmt.Sprintf("session_id: %v: ignored", err))
		} else {
			ev.ConversationID = id
		}
	}
	if f.transcript != "" {
		if filepath.IsAbs(f.transcript) {
			ev.TranscriptPath = filepath.Clean(f.transcript)
		} else {
			ev.Notices = append(ev.Notices, fmt.Sprintf("transcript_path %q is not absolute: ignored", cutText(f.transcript, 200)))
		}
	}
	tool := cutText(f.tool, 64)
	switch f.event {
	case "SessionStart":
		ev.SessionStarted, ev.Source = true, cutText(f.source, 32)
	case "UserPromptSubmit":
		ev.State, ev.TurnStarted, ev.Prompt = StateWorking, true, firstLine(f.prompt)
	case "PreToolUse", "PostToolUse":
		ev.State, ev.Tool = StateWorking, tool
	case "PermissionRequest":
		ev.State, ev.Tool = StateWaiting, tool
		ev.WaitingReason = waitReason(WaitPermission, tool)
	case "Notification":
		msg := firstLine(f.message)
		switch f.notificationType {
		case "permission_prompt":
			ev.State, ev.WaitingReason = StateWaiting, waitReason(WaitPermission, msg)
		case "elicitation_dialog":
			ev.State, ev.WaitingReason = StateWaiting, waitReason(WaitQuestion, msg)
		case "idle_prompt":
			ev.State, ev.WaitingReason = StateWaiting, WaitPrompt
		}
	case "Stop":
		ev.TurnEnded, ev.Reply = true, firstLine(f.lastMessage)
		ev.State = turnEndState(interactive)
		if interactive {
			ev.WaitingReason = WaitPrompt
		}
	case "StopFailure":
		// The turn ended at an API error the agent did not get past.
		ev.TurnEnded, ev.State = true, turnEndState(interactive)
		if interactive {
			ev.WaitingReason = WaitPrompt
		}
		if l, ok := claudeStopFailure(f.errName, f.errDetails, f.lastMessage, time.Now()); ok {
			ev.Limit = &l
		}
	case "PreCompact":
		ev.State, ev.Compacting, ev.Source = StateWorking, true, cutText(f.trigger, 32)
	case "SessionEnd":
		ev.State, ev.SessionEnded, ev.EndReason = StateIdle, true, cutText(f.reason, 64)
	default:
		return ev, fmt.Errorf("%w: Claude Code's %q", ErrUnknownEvent, ev.Hook)
	}
	if f.promptID != "" && (ev.TurnStarted || ev.TurnEnded) {
		ev.TurnID = cutText(f.promptID, 64)
	}
	return ev, nil
}

// waitReason is a waiting reason: its kind, then what the agent said.
func waitReason(kind, detail string) string {
	if detail == "" {
		return kind
	}
	return kind + ": " + detail
}

// turnEndState is the state after a turn: waiting for the next prompt when
// a person is there to give it, idle otherwise.
func turnEndState(interactive bool) State {
	if interactive {
		return StateWaiting
	}
	return StateIdle
}

func (claudeCode) Transcript(path string, opts TranscriptOptions) *Transcript {
	return newTranscript(path, &claudeLines{}, opts)
}

// claudeLines reads Claude Code's transcript: the usage of its assistant
// messages and the cost of its cost-state records.
//
// Claude Code writes an assistant message as one line per content block,
// each with the message's id, the request's and the usage, so usage is
// counted once per message and request: a later line of the same message
// replaces the earlier count.
type claudeLines struct {
	// retrying says that the last word on the API was a failed request.
	retrying  bool
	sum       Usage
	cost      float64
	costKnown bool
	seen      map[string]Usage
	order     []string
}

// claudeRemembered bounds the message ids kept for that: the lines of one
// message are written together.
const claudeRemembered = 256

type claudeUsage struct {
	Input      int64 `json:"input_tokens"`
	Output     int64 `json:"output_tokens"`
	CacheRead  int64 `json:"cache_read_input_tokens"`
	CacheWrite int64 `json:"cache_creation_input_tokens"`
}

func (u claudeUsage) usage() Usage {
	return Usage{InputTokens: count(u.Input), OutputTokens: count(u.Output), CacheReadTokens: count(u.CacheRead), CacheWriteTokens: count(u.CacheWrite)}
}

var (
	claudeCostMark       = []byte(`"cost-state"`)
	claudeAPIErrorMark   = []byte(`"subtype":"api_error"`)
	claudeUsageMark      = []byte(`"usage"`)
	claudeUsageKey       = []byte(`"usage":`)
	claudeAssistantMark  = []byte(`"type":"assistant"`)
	claudeMessageIDMark  = []byte(`"message":{"id":"`)
	claudeRequestRefMark = []byte(`"requestRef":"`)
	claudeRequestIDMark  = []byte(`"requestId":"`)
	claudeAPIErrorMsg    = []byte(`"isApiErrorMessage":true`)
)

func (c *claudeLines) line(b []byte, _ TranscriptOptions) ([]Event, bool) {
	if bytes.Contains(b, claudeAPIErrorMark) {
		evs, ok := claudeRetry(b)
		c.retrying = c.retrying || len(evs) > 0
		return evs, ok
	}
	if bytes.Contains(b, claudeCostMark) {
		var v struct {
			Type string   `json:"type"`
			Cost *float64 `json:"totalCostUSD"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, false
		}
		if v.Type == "cost-state" && v.Cost != nil {
			// The total of the conversation: Claude Code carries it over
			// when a conversation is resumed.
			if cst, ok := cost(*v.Cost); ok {
				c.cost, c.costKnown = cst, true
			}
		}
		return nil, true
	}
	if bytes.Contains(b, claudeAPIErrorMsg) {
		return claudeErrorMessage(b)
	}
	if !bytes.Contains(b, claudeUsageMark) {
		return nil, true
	}
	var v struct {
		Type    string `json:"type"`
		Message struct {
			ID    string       `json:"id"`
			Model string       `json:"model"`
			Usage *claudeUsage `json:"usage"`
		} `json:"message"`
		RequestRef string `json:"requestRef"`
		RequestID  string `json:"requestId"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, false
	}
	if v.Type == "assistant" && v.Message.Usage != nil {
		u := v.Message.Usage.usage()
		u.EstimatedUSD = PriceOf(v.Message.Model, claudeDefaultPrice).Cost(u)
		c.count(claudeMessageKey(v.Message.ID, v.RequestRef+v.RequestID), u)
		if c.retrying {
			// A response after failed requests: the API answered.
			c.retrying = false
			return []Event{{Agent: "claude-code", Hook: "assistant", Answered: true}}, true
		}
	}
	return nil, true
}

// claudeErrorMessage reads the message Claude Code shows in place of a
// reply when the API refused it ({"type":"assistant","isApiErrorMessage":
// true,"message":{"content":[{"type":"text","text":"Claude AI usage limit
// reached|1767225600"}]}}): a limit, when it tells of one.
func claudeErrorMessage(b []byte) ([]Event, bool) {
	var v struct {
		Type    string `json:"type"`
		Message struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"message"`
		Timestamp string `json:"timestamp"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, false
	}
	var text strings.Builder
	for _, c := range v.Message.Content {
		if c.Type == "text" {
			text.WriteString(c.Text)
			text.WriteByte('\n')
		}
	}
	at := parseTime(v.Timestamp)
	now := at
	if now.IsZero() {
		now = time.Now()
	}
	l, ok := ClassifyMessage(text.String(), now, nil)
	if !ok {
		return nil, true
	}
	return []Event{{Agent: "claude-code", Hook: "api_error_message", Limit: &l, At: at}}, true
}

// claudeRetry reads Claude Code's record of a failed API request it
// retries: {"type":"system","subtype":"api_error","error":{"formatted":
// "529 Overloaded","status":529,...},"retryInMs":530,"retryAttempt":1,
// "maxRetries":10,"timestamp":...}.
func claudeRetry(b []byte) ([]Event, bool) {
	var v struct {
		Type    string `json:"type"`
		Subtype string `json:"subtype"`
		Error   struct {
			Formatted string `json:"formatted"`
			Message   string `json:"message"`
			Status    int    `json:"status"`
		} `json:"error"`
		RetryInMs    float64 `json:"retryInMs"`
		RetryAttempt int     `json:"retryAttempt"`
		MaxRetries   int     `json:"maxRetries"`
		Timestamp    string  `json:"timestamp"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, false
	}
	if v.Type != "system" || v.Subtype != "api_error" {
		return nil, true
	}
	reason := firstLine(v.Error.Formatted)
	if reason == "" {
		reason = firstLine(v.Error.Message)
	}
	if reason == "" && v.Error.Status != 0 {
		reason = fmt.Sprintf("HTTP %d", v.Error.Status)
	}
	if reason == "" {
		reason = "API error"
	}
	at := parseTime(v.Timestamp)
	r := &Retry{Attempt: max(v.RetryAttempt, 1), Max: max(v.MaxRetries, 0), Reason: cutText(reason, 200)}
	if !at.IsZero() && v.RetryInMs > 0 && v.RetryInMs < 1e9 {
		r.Next = at.Add(time.Duration(v.RetryInMs * float64(time.Millisecond)))
	}
	return []Event{{Agent: "claude-code", Hook: "api_error", Retry: r, At: at}}, true
}

// overlong reads an over-long assistant line's usage from its end, where
// Claude Code writes it: the last "usage": key in the tail is the
// message's (inside a JSON string the quotes would be escaped).
func (c *claudeLines) overlong(head, tail []byte) {
	if !bytes.Contains(tail, claudeAssistantMark) {
		return
	}
	i := bytes.LastIndex(tail, claudeUsageKey)
	if i < 0 {
		return
	}
	var u claudeUsage
	if err := json.NewDecoder(bytes.NewReader(tail[i+len(claudeUsageKey):])).Decode(&u); err != nil {
		return
	}
	c.count(claudeMessageKey(stringAfter(head, claudeMessageIDMark), stringAfter(tail, claudeRequestRefMark)+stringAfter(tail, claudeRequestIDMark)), u.usage())
}

// claudeMessageKey identifies one message of one request; "" when the line
// has no message id.
func claudeMessageKey(id, request string) string {
	if id == "" {
		return ""
	}
	return id + "/" + request
}

// stringAfter is the JSON string that follows the last mark (which ends in
// an opening quote), without unescaping, or "".
func stringAfter(b, mark []byte) string {
	j := bytes.LastIndex(b, mark)
	if j < 0 {
		return ""
	}
	rest := b[j+len(mark):]
	if k := bytes.IndexByte(rest, '"'); k > 0 && k <= 128 {
		return string(rest[:k])
	}
	return ""
}

func (c *claudeLines) count(id string, u Usage) {
	if id == "" {
		c.sum = c.sum.Add(u)
		return
	}
	if c.seen == nil {
		c.seen = make(map[string]Usage)
	}
	if old, ok := c.seen[id]; ok {
		c.sum = c.sum.Since(old).Add(u)
		c.seen[id] = u
		return
	}
	c.sum = c.sum.Add(u)
	c.seen[id] = u
	c.order = append(c.order, id)
	if len(c.order) > claudeRemembered {
		delete(c.seen, c.order[0])
		c.order = c.order[1:]
	}
}

func (c *claudeLines) usage() Usage {
	u := c.sum
	u.CostUSD, u.CostKnown = c.cost, c.costKnown
	u.EstimatedUSD = roundUSD(u.EstimatedUSD)
	return u
}

func (c *claudeLines) reset() { *c = claudeLines{} }
