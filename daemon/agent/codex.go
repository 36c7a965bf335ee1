package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/google/uuid"
)

// Codex is the adapter of OpenAI's Codex CLI (`codex`), written against
// version 0.169.
var Codex Adapter = codex{}

func init() { register(Codex, "codex") }

type codex struct{}

// codexRootGrammar is `codex [OPTIONS] [PROMPT]` and the options that may
// stand before a subcommand.
var codexRootGrammar = cliGrammar{
	options: map[string]valueKind{
		"-c": oneValue, "--config": oneValue, "--enable": oneValue, "--disable": oneValue,
		"--remote": oneValue, "--remote-auth-token-env": oneValue, "-m": oneValue, "--model": oneValue,
		"--local-provider": oneValue, "-p": oneValue, "--profile": oneValue, "-s": oneValue,
		"--sandbox": oneValue, "-C": oneValue, "--cd": oneValue, "--add-dir": oneValue,
		"-a": oneValue, "--ask-for-approval": oneValue, "--thread-source": oneValue,
		"--cyber-access-program": oneValue, "--output-schema": oneValue, "--color": oneValue,
		"-o": oneValue, "--output-last-message": oneValue,
		"-i": manyValues, "--image": manyValues,
	},
	subcommands: map[string]bool{
		"exec": true, "e": true, "resume": true, "fork": true,
		"agents": true, "review": true, "login": true, "logout": true, "mcp": true, "mcp-server": true,
		"plugin": true, "app-server": true, "remote-control": true, "completion": true, "update": true,
		"doctor": true, "sandbox": true, "debug": true, "apply": true, "a": true, "queue": true,
		"archive": true, "delete": true, "migrate-rollouts": true, "migrate-nfs-db": true,
		"unarchive": true, "cloud": true, "exec-server": true, "features": true, "help": true,
	},
}

// codexExecGrammar is `codex exec [OPTIONS] [PROMPT]` and its subcommands.
var codexExecGrammar = cliGrammar{
	options: codexRootGrammar.options,
	subcommands: map[string]bool{
		"resume": true, "fork": true, "review": true, "help": true,
	},
}

// codexCommand is a codex command line split at its subcommands.
type codexCommand struct {
	argv0 string
	// root are the options before the subcommand (or the whole line of an
	// interactive session without one).
	root []string
	// sub is "", "exec", "resume", "fork" or another subcommand.
	sub string
	// subOpts are the subcommand's options; execSub is exec's own
	// subcommand ("resume", "fork", "review") and execSubOpts its options.
	subOpts     []string
	execSub     string
	execSubOpts []string
	// positionals are the prompt (and, after resume or fork, the id
	// first), in order.
	positionals []string
	// options are every option found, at every level.
	options []cliOption
	help    bool
}

func parseCodex(argv []string) codexCommand {
	c := codexCommand{argv0: argv[0]}
	args := argv[1:]
	rs := codexRootGrammar.scan(args, true)
	rest := args[rs.Stop:]
	if len(rest) == 0 || !codexRootGrammar.subcommands[rest[0]] {
		// An interactive session, its prompt (if any) among the options.
		s := codexRootGrammar.scan(args, false)
		c.collect(args, s)
		c.root = optionArgs(args, s)
		c.help = codexHasHelp(c.options)
		return c
	}
	c.options = append(c.options, rs.Options...)
	c.root = args[:rs.Stop]
	c.sub = rest[0]
	if c.sub == "e" {
		c.sub = "exec"
	}
	rest = rest[1:]
	if c.sub == "exec" {
		es := codexExecGrammar.scan(rest, true)
		if es.Stop < len(rest) && codexExecGrammar.subcommands[rest[es.Stop]] {
			c.options = append(c.options, es.Options...)
			c.subOpts = rest[:es.Stop]
			c.execSub = rest[es.Stop]
			rest = rest[es.Stop+1:]
			s := codexExecGrammar.scan(rest, false)
			c.collect(rest, s)
			c.execSubOpts = optionArgs(rest, s)
		} else {
			s := codexExecGrammar.scan(rest, false)
			c.collect(rest, s)
			c.subOpts = optionArgs(rest, s)
		}
	} else {
		s := codexRootGrammar.scan(rest, false)
		c.collect(rest, s)
		c.subOpts = optionArgs(rest, s)
	}
	c.help = codexHasHelp(c.options)
	return c
}

// collect adds a scan's options and positionals.
func (c *codexCommand) collect(args []string, s cliScan) {
	c.options = append(c.options, s.Options...)
	for _, i := range s.Positionals {
		c.positionals = append(c.positionals, args[i])
	}
}

// optionArgs are the arguments of a scan's options, in order.
func optionArgs(args []string, s cliScan) []string {
	var out []string
	for _, o := range s.Options {
		out = append(out, args[o.Start:o.End]...)
	}
	return out
}

func codexHasHelp(opts []cliOption) bool {
	for _, o := range opts {
		switch o.Name {
		case "-h", "--help", "-V", "--version":
			return true
		}
	}
	return false
}

// session is whether the command line runs an agent session.
func (c codexCommand) session() bool {
	if c.help {
		return false
	}
	switch c.sub {
	case "", "resume", "fork":
		return true
	case "exec":
		return c.execSub == "" || c.execSub == "resume" || c.execSub == "fork"
	}
	return false
}

func (c codexCommand) interactive() bool { return c.sub == "" || c.sub == "resume" || c.sub == "fork" }

// resuming is whether the line already continues or forks a conversation;
// id is the one it names, if any (else --last).
func (c codexCommand) resuming() (id string, ok bool) {
	if c.sub != "resume" && c.sub != "fork" && c.execSub != "resume" && c.execSub != "fork" {
		return "", false
	}
	if len(c.positionals) > 0 && !c.last() {
		return c.positionals[0], true
	}
	return "", true
}

// last is whether the line resumes the most recent conversation (--last),
// whose positional is then the prompt rather than an id.
func (c codexCommand) last() bool {
	for _, o := range c.options {
		if o.Name == "--last" {
			return true
		}
	}
	return false
}

// prompt is the prompt positional, if any.
func (c codexCommand) prompt() []string {
	if _, ok := c.resuming(); ok && len(c.positionals) > 0 && !c.last() {
		return c.positionals[1:]
	}
	return c.positionals
}

func (codex) Name() string { return "codex" }

func (codex) Interactive(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	c := parseCodex(argv)
	return c.session() && c.interactive()
}

func (a codex) Prepare(ctx context.Context, l Launch) (Plan, error) {
	if err := checkLaunch(l); err != nil {
		return Plan{}, err
	}
	p := Plan{Agent: a.Name(), Argv: slices.Clone(l.Argv), InitialState: StateUnknown}
	c := parseCodex(l.Argv)
	if !c.session() {
		what := "--help or --version"
		if c.sub != "" {
			what = strings.TrimSpace("codex " + c.sub + " " + c.execSub)
		}
		p.Notices = append(p.Notices, fmt.Sprintf("%s is not an agent session: it runs as it is", what))
		return p, nil
	}
	argv := slices.Clone(l.Argv)
	if l.Resume != "" {
		id, err := ParseConversationID(l.Resume)
		var conv Conversation
		if err == nil {
			conv, err = a.Locate(ctx, Query{ConversationID: id, Env: l.Env})
		}
		if err != nil {
			p.Notices = append(p.Notices, fmt.Sprintf("conversation %s is not resumed (%v): a new conversation starts", cutText(l.Resume, 64), err))
		} else {
			argv, _ = a.Resume(argv, id)
			c = parseCodex(argv)
			p.Resumed, p.ConversationID, p.TranscriptPath = true, id, conv.TranscriptPath
		}
	}
	if id, ok := c.resuming(); ok && !p.Resumed && c.sub != "fork" && c.execSub != "fork" {
		if id, err := ParseConversationID(id); err == nil {
			p.ConversationID = id
			if conv, err := a.Locate(ctx, Query{ConversationID: id, Env: l.Env}); err == nil {
				p.TranscriptPath = conv.TranscriptPath
			}
		}
	}
	p.Interactive = l.TTY && c.interactive()

	userNotify, err := codexUserNotify(c, l.Env, filesOr(l.Files))
	if err != nil {
		p.Notices = append(p.Notices, err.Error())
	}
	notify := []string{l.Sessionctl, "hook", "codex"}
	if len(userNotify) > 0 {
		// sessionctl runs the user's own program after it, with the same
		// payload: -c notify replaces the one in config.toml.
		notify = append(append(notify, "--"), userNotify...)
	}
	front := []string{"-c", "notify=" + tomlStrings(notify)}
	if l.MCP {
		front = append(front, "-c", "mcp_servers."+MCPServerName+"="+codexMCPServer(l))
	}
	p.Argv = append(append([]string{argv[0]}, front...), codexWithoutNotify(argv[1:])...)
	p.Integrated = true

	switch {
	case !p.Interactive || len(c.prompt()) > 0:
		p.InitialState = StateWorking
	default:
		p.InitialState, p.InitialWaiting = StateWaiting, WaitPrompt
	}
	return p, nil
}

// codexWithoutNotify is args less the user's own -c notify=..., which
// sessiond's notify chains.
func codexWithoutNotify(args []string) []string {
	out := slices.Clone(args)
	// The options' indexes are per subcommand level: find them by value.
	for i := 0; i < len(out); i++ {
		if (out[i] == "-c" || out[i] == "--config") && i+1 < len(out) && isNotifyOverride(out[i+1]) {
			out = append(out[:i], out[i+2:]...)
			i--
			continue
		}
		if v, ok := strings.CutPrefix(out[i], "--config="); ok && isNotifyOverride(v) {
			out = append(out[:i], out[i+1:]...)
			i--
		}
	}
	return out
}

func isNotifyOverride(kv string) bool {
	k, _, ok := strings.Cut(kv, "=")
	return ok && strings.TrimSpace(k) == "notify"
}

// codexUserNotify is the user's own notify program: the last -c notify=...
// on the command line, else the notify of $CODEX_HOME/config.toml.
func codexUserNotify(c codexCommand, env []string, files FS) ([]string, error) {
	var value string
	for _, o := range c.options {
		if (o.Name == "-c" || o.Name == "--config") && len(o.Values) > 0 && isNotifyOverride(o.Values[0]) {
			_, value, _ = strings.Cut(o.Values[0], "=")
		}
	}
	if value != "" {
		var v struct{ Notify []string }
		if _, err := toml.Decode("notify = "+value, &v); err != nil {
			return nil, fmt.Errorf("-c notify=%s is not a TOML array of strings (%v): it is left out", cutText(value, 200), err)
		}
		return v.Notify, nil
	}
	path := filepath.Join(codexHome(env), "config.toml")
	data, err := files.ReadFile(path, 1<<20)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("read %s for its notify program: %v", path, err)
	}
	var v struct{ Notify []string }
	if _, err := toml.Decode(string(data), &v); err != nil {
		return nil, fmt.Errorf("read %s for its notify program: %v", path, err)
	}
	return v.Notify, nil
}

// tomlStrings is a TOML array of strings. A JSON string is a TOML basic
// string: Go never writes the one JSON escape TOML lacks (\/).
func tomlStrings(ss []string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = tomlString(s)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// codexMCPServer is the mcp_servers.sessiond inline table. Codex starts an
// MCP server with a cleared environment, so the session's id and socket are
// given to it here.
func codexMCPServer(l Launch) string {
	env := "SESSIOND_SESSION_ID=" + tomlString(l.SessionID)
	if l.Socket != "" {
		env += ",SESSIOND_SOCKET=" + tomlString(l.Socket)
	}
	return "{command=" + tomlString(l.Sessionctl) + `,args=["mcp"],env={` + env + "}}"
}

func (codex) Resume(argv []string, conversationID string) ([]string, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("%w: no command", ErrNotResumable)
	}
	id, err := ParseConversationID(conversationID)
	if err != nil {
		return nil, err
	}
	c := parseCodex(argv)
	if !c.session() {
		return nil, fmt.Errorf("%w: codex %s is not an agent session", ErrNotResumable, c.sub)
	}
	out := append([]string{argv[0]}, c.root...)
	resumeOpts := codexResumeOptionsFree(c.subOpts)
	if c.sub == "exec" {
		out = append(append(out, "exec"), codexResumeOptionsFree(c.subOpts)...)
		resumeOpts = codexResumeOptionsFree(c.execSubOpts)
	}
	out = append(append(out, "resume"), resumeOpts...)
	out = append(out, id)
	prompt := c.prompt()
	if slices.ContainsFunc(prompt, isOptionLike) {
		out = append(out, "--")
	}
	return append(out, prompt...), nil
}

// codexResumeOptionsFree drops the options that pick a conversation
// (--last, --all) from a resume's options.
func codexResumeOptionsFree(opts []string) []string {
	out := make([]string, 0, len(opts))
	for _, o := range opts {
		if o != "--last" && o != "--all" {
			out = append(out, o)
		}
	}
	return out
}

// codexHome is Codex's state directory: CODEX_HOME, else ~/.codex.
func codexHome(env []string) string {
	if d := lookupEnv(env, "CODEX_HOME"); d != "" {
		return d
	}
	return filepath.Join(homeDir(env), ".codex")
}

// codexSessionMeta is the first line of a rollout file.
type codexSessionMeta struct {
	Type    string `json:"type"`
	Payload struct {
		ID        string `json:"id"`
		Cwd       string `json:"cwd"`
		Timestamp string `json:"timestamp"`
	} `json:"payload"`
}

// codexMetaLimit bounds the first line Locate reads: it carries the base
// instructions (22 KiB measured).
const codexMetaLimit = 1 << 20

// Locate finds a Codex conversation among its rollout files,
// $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl: by the id in
// the file name, or by the first line's working directory and time, never
// reading more of a file than that first line.
func (codex) Locate(ctx context.Context, q Query) (Conversation, error) {
	files := filesOr(q.Files)
	sessions := filepath.Join(codexHome(q.Env), "sessions")
	if q.ConversationID != "" {
		id, err := ParseConversationID(q.ConversationID)
		if err != nil {
			return Conversation{}, err
		}
		suffix := "-" + id + ".jsonl"
		// Codex's ids are version 7 UUIDs, which carry their time: look in
		// that day's directory first, then everywhere.
		var days []string
		if u := uuid.MustParse(id); u.Version() == 7 {
			sec, nsec := u.Time().UnixTime()
			days = codexDays(sessions, time.Unix(sec, nsec), time.Unix(sec, nsec))
		}
		for _, d := range days {
			if c, ok := codexFind(files, d, suffix, id); ok {
				return c, nil
			}
		}
		for _, d := range codexAllDays(files, sessions) {
			if err := ctx.Err(); err != nil {
				return Conversation{}, err
			}
			if c, ok := codexFind(files, d, suffix, id); ok {
				return c, nil
			}
		}
		return Conversation{}, fmt.Errorf("%w: no rollout of conversation %s under %s", ErrNoConversation, id, sessions)
	}
	if q.ProjectDir == "" {
		return Conversation{}, fmt.Errorf("%w: neither a conversation id nor a project to look in", ErrNoConversation)
	}
	want := sameDir(files, q.ProjectDir)
	since := q.Since.Add(-time.Second)
	var found []Conversation
	for _, d := range codexDays(sessions, q.Since, time.Now()) {
		entries, err := files.ReadDir(d, maxListed)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if err := ctx.Err(); err != nil {
				return Conversation{}, err
			}
			name := e.Name()
			if !strings.HasPrefix(name, "rollout-") || !strings.HasSuffix(name, ".jsonl") {
				continue
			}
			if !e.Mode().IsRegular() || e.ModTime().Before(since) {
				continue
			}
			path := filepath.Join(d, name)
			meta, err := readCodexMeta(files, path)
			if err != nil || !want(meta.Payload.Cwd) {
				continue
			}
			if ts := parseTime(meta.Payload.Timestamp); !ts.IsZero() && ts.Before(since) {
				continue
			}
			id, err := ParseConversationID(meta.Payload.ID)
			if err != nil {
				continue
			}
			found = append(found, Conversation{ID: id, TranscriptPath: path})
		}
	}
	return oneConversation(found, sessions, q)
}

// codexDays are the day directories that may hold a rollout started
// between from and to, in local time and in UTC (either may be Codex's),
// with a day's margin each side.
func codexDays(sessions string, from, to time.Time) []string {
	seen := map[string]bool{}
	var out []string
	if to.Before(from) {
		to = from
	}
	for _, loc := range []*time.Location{time.Local, time.UTC} {
		for d := from.In(loc).AddDate(0, 0, -1); !d.After(to.In(loc).AddDate(0, 0, 1)); d = d.AddDate(0, 0, 1) {
			p := filepath.Join(sessions, d.Format("2006"), d.Format("01"), d.Format("02"))
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
			if len(out) > 64 {
				return out
			}
		}
	}
	return out
}

// codexFind looks in one day directory for the rollout ending in suffix.
func codexFind(files FS, dir, suffix, id string) (Conversation, bool) {
	entries, err := files.ReadDir(dir, maxListed)
	if err != nil {
		return Conversation{}, false
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "rollout-") && strings.HasSuffix(e.Name(), suffix) && e.Mode().IsRegular() {
			return Conversation{ID: id, TranscriptPath: filepath.Join(dir, e.Name())}, true
		}
	}
	return Conversation{}, false
}

// codexAllDays are the day directories (YYYY/MM/DD) under sessions.
func codexAllDays(files FS, sessions string) []string {
	var out []string
	level := []string{sessions}
	for range 3 {
		var next []string
		for _, d := range level {
			entries, _ := files.ReadDir(d, maxListed)
			for _, e := range entries {
				if e.IsDir() && e.Name() != "" && e.Name()[0] >= '0' && e.Name()[0] <= '9' {
					next = append(next, filepath.Join(d, e.Name()))
				}
			}
		}
		level = next
	}
	out = append(out, level...)
	return out
}

// readCodexMeta reads a rollout's first line, and no more.
func readCodexMeta(files FS, path string) (codexSessionMeta, error) {
	var m codexSessionMeta
	f, err := files.Open(path)
	if err != nil {
		return m, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(io.LimitReader(f, codexMetaLimit), 64<<10)
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if err == nil || !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
	}
	if err := json.Unmarshal(bytes.TrimSpace(line), &m); err != nil {
		return m, fmt.Errorf("%s: first line: %w", path, err)
	}
	if m.Type != "session_meta" {
		return m, fmt.Errorf("%s: first line is %q, not session_meta", path, m.Type)
	}
	return m, nil
}

// sameDir returns a test of whether a directory is dir, symlinks resolved.
// A directory a rollout names is resolved with the user's rights.
func sameDir(files FS, dir string) func(string) bool {
	dir = filepath.Clean(dir)
	real, _ := files.Resolve(dir)
	return func(d string) bool {
		if d == "" || !filepath.IsAbs(d) {
			return false
		}
		d = filepath.Clean(d)
		if d == dir || d == real {
			return true
		}
		r, err := files.Resolve(d)
		return err == nil && (r == dir || r == real)
	}
}

// ParseHook reads the JSON argument Codex gives its notify program.
func (a codex) ParseHook(payload []byte, interactive bool) (Event, error) {
	if len(payload) > MaxPayload {
		return Event{}, fmt.Errorf("%w: %d bytes, over the %d limit", ErrBadPayload, len(payload), MaxPayload)
	}
	var v struct {
		Type     string   `json:"type"`
		ThreadID string   `json:"thread-id"`
		TurnID   string   `json:"turn-id"`
		Cwd      string   `json:"cwd"`
		Input    []string `json:"input-messages"`
		Last     *string  `json:"last-assistant-message"`
	}
	if err := json.Unmarshal(payload, &v); err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrBadPayload, describeJSONError(err))
	}
	if v.Type == "" {
		return Event{}, fmt.Errorf("%w: no type", ErrBadPayload)
	}
	ev := Event{Agent: a.Name(), Hook: cutText(v.Type, 64), Cwd: v.Cwd}
	if v.ThreadID != "" {
		if id, err := ParseConversationID(v.ThreadID); err != nil {
			ev.Notices = append(ev.Notices, fmt.Sprintf("thread-id: %v: ignored", err))
		} else {
			ev.ConversationID = id
		}
	}
	switch v.Type {
	case "agent-turn-complete":
		ev.TurnEnded, ev.TurnID = true, cutText(v.TurnID, 64)
		if len(v.Input) > 0 {
			// input-messages are every prompt of the conversation so far;
			// this turn's is the last.
			ev.Prompt = firstLine(v.Input[len(v.Input)-1])
		}
		if v.Last != nil {
			ev.Reply = firstLine(*v.Last)
		}
		ev.State = turnEndState(interactive)
		if interactive {
			ev.WaitingReason = WaitPrompt
		}
	case "approval-requested":
		// Sent by Codex versions whose notify covers approvals.
		ev.State, ev.WaitingReason = StateWaiting, WaitPermission
	default:
		return ev, fmt.Errorf("%w: Codex's %q", ErrUnknownEvent, ev.Hook)
	}
	return ev, nil
}

func (codex) Transcript(path string, opts TranscriptOptions) *Transcript {
	return newTranscript(path, &codexLines{}, opts)
}

// codexLines reads a Codex rollout: token_count events carry the
// conversation's running total (carried over on resume), task_started and
// task_complete (or turn_aborted) the turns.
type codexLines struct {
	total Usage
	// model is the turn's model (turn_context), for the cost estimate.
	model string
}

type codexTokens struct {
	Input      int64 `json:"input_tokens"`
	Cached     int64 `json:"cached_input_tokens"`
	CacheWrite int64 `json:"cache_write_input_tokens"`
	Output     int64 `json:"output_tokens"`
}

var codexMarks = [][]byte{[]byte(`"token_count"`), []byte(`"task_started"`), []byte(`"task_complete"`), []byte(`"turn_aborted"`), []byte(`"session_meta"`),
	[]byte(`"type":"error"`), []byte(`"type":"stream_error"`), []byte(`"turn_context"`)}

func (c *codexLines) line(b []byte, opts TranscriptOptions) ([]Event, bool) {
	marked := false
	for _, m := range codexMarks {
		if bytes.Contains(b, m) {
			marked = true
			break
		}
	}
	if !marked {
		return nil, true
	}
	var v struct {
		Timestamp string `json:"timestamp"`
		Type      string `json:"type"`
		Payload   struct {
			Type    string  `json:"type"`
			ID      string  `json:"id"`
			Cwd     string  `json:"cwd"`
			TurnID  string  `json:"turn_id"`
			Last    *string `json:"last_agent_message"`
			Reason  string  `json:"reason"`
			Summary struct {
				Total *codexTokens `json:"total_token_usage"`
			} `json:"info"`
			Message         string          `json:"message"`
			Model           string          `json:"model"`
			ResetsInSeconds float64         `json:"resets_in_seconds"`
			Error           json.RawMessage `json:"error"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, false
	}
	at := parseTime(v.Timestamp)
	ev := Event{Agent: "codex", Hook: v.Payload.Type, At: at, TurnID: cutText(v.Payload.TurnID, 64)}
	switch {
	case v.Type == "session_meta":
		ev.Hook, ev.SessionStarted, ev.Cwd = "session_meta", true, v.Payload.Cwd
		if id, err := ParseConversationID(v.Payload.ID); err == nil {
			ev.ConversationID = id
		}
		return []Event{ev}, true
	case v.Type == "turn_context":
		c.model = v.Payload.Model
		return nil, true
	case v.Type != "event_msg":
		return nil, true
	}
	switch v.Payload.Type {
	case "token_count":
		if t := v.Payload.Summary.Total; t != nil {
			c.total = Usage{
				InputTokens:      max(count(t.Input)-count(t.Cached), 0),
				CacheReadTokens:  count(t.Cached),
				CacheWriteTokens: count(t.CacheWrite),
				OutputTokens:     count(t.Output),
			}
		}
		return nil, true
	case "task_started":
		ev.State, ev.TurnStarted = StateWorking, true
	case "task_complete", "turn_aborted":
		ev.TurnEnded, ev.State = true, turnEndState(opts.Interactive)
		if opts.Interactive {
			ev.WaitingReason = WaitPrompt
		}
		if v.Payload.Last != nil {
			ev.Reply = firstLine(*v.Payload.Last)
		}
		if v.Payload.Type == "turn_aborted" {
			ev.EndReason = cutText(v.Payload.Reason, 64)
		}
	case "error", "stream_error":
		// A failed request: a stream_error is retried, an error ends the
		// turn. Either may tell of a limit.
		now := at
		if now.IsZero() {
			now = time.Now()
		}
		e := codexError{Type: v.Payload.Type, Message: v.Payload.Message, ResetsInSeconds: v.Payload.ResetsInSeconds}
		if inner := codexErrorOf("", nil, v.Payload.Error, nil); inner != nil {
			e.Error = &struct {
				Type            string  `json:"type"`
				Message         string  `json:"message"`
				ResetsInSeconds float64 `json:"resets_in_seconds"`
				ResetsAt        float64 `json:"resets_at"`
			}{inner.Type, inner.Message, inner.ResetsInSeconds, inner.ResetsAt}
		}
		l, ok := e.limit(now)
		if v.Payload.Type == "stream_error" {
			ev.Retry = &Retry{Attempt: 1, Reason: cutText(firstLine(v.Payload.Message), 200)}
			if ok && l.Class != LimitThrottle {
				ev.Limit = &l
			}
			return []Event{ev}, true
		}
		if !ok {
			return nil, true
		}
		ev.Limit = &l
	default:
		return nil, true
	}
	return []Event{ev}, true
}

// overlong: a rollout's long lines are tool output; its usage lines are
// short and give the running total, so nothing is lost by skipping one.
func (c *codexLines) overlong(head, tail []byte) {}

func (c *codexLines) usage() Usage {
	u := c.total
	u.EstimatedUSD = roundUSD(PriceOf(c.model, codexDefaultPrice).Cost(u))
	return u
}

func (c *codexLines) reset() { *c = codexLines{} }
