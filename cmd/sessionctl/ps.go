package main

import (
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/spf13/cobra"

	"github.com/sessiond/sessiond/ipc"
)

func (a *app) psCmd() *cobra.Command {
	var all, quiet, chains, noTrunc, allContexts bool
	var format string
	var hostTimeout time.Duration
	var filters []string
	cmd := &cobra.Command{
		Use:   "ps [-a] [-q] [--chains] [--no-trunc] [--filter KEY=VALUE]... [--format TEMPLATE]",
		Short: "List sessions (a restart chain is one row: its latest session)",
		Long: `List sessions: the live ones, with -a the ended ones too. A session restarted
by its restart policy (or sessionctl restart) is one row, its latest session,
with the chain's RESTARTS count; --chains lists every session of a chain.

--filter KEY=VALUE keeps matching sessions (one key given twice: either
value; different keys: both): state=queued|starting|running|warned|stopping|
ended|failed|live, name=NAME (a * matches any run), project=DIR (the directory, or
its base name), reason=END_REASON.

--format takes a Go template over the row's fields: .ID .Name .Project
.ProjectDir .Command .State .Reason .PID .CPU .Mem .Uptime .Remaining
.Restarts .LastActivity .Checkpoints .Worktree .Port .Agent .Tokens .Conversation, and
.StartedAt .EndedAt .Deadline (times). "table" before it prints a header and aligns columns, as docker does:
--format 'table {{.ID}}\t{{.Name}}\t{{.State}}'.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			match, err := parseFilters(filters)
			if err != nil {
				return usageErr("%v", err)
			}
			opt := ipc.ListOptions{All: all, Chains: chains}
			var tmpl *template.Template
			table := format == "" || strings.HasPrefix(format, "table")
			if format != "" {
				body := strings.TrimSpace(strings.TrimPrefix(format, "table"))
				if tmpl, err = template.New("ps").Option("missingkey=error").Parse(unescapeTabs(body)); err != nil {
					return usageErr("--format: %v", err)
				}
				// A field that is none is an error whether or not there
				// are sessions to show.
				if err := tmpl.Execute(io.Discard, psRow{}); err != nil && noField().MatchString(err.Error()) {
					return formatErr(err)
				}
			}
			opt.Stats = !quiet && (tmpl == nil || usesUsage(format))
			if allContexts && (a.host != "" || a.context != "") {
				return usageErr("--all-contexts asks every context: give it no --host or --context (or give those without it)")
			}
			if allContexts || strings.Contains(a.context, ",") {
				return a.psHosts(cmd.Context(), opt, match, allContexts, hostTimeout, quiet, tmpl, table, noTrunc)
			}
			if a.json && len(filters) == 0 {
				return a.passJSON(a.client.SessionsJSON(cmd.Context(), opt))
			}
			if a.json {
				list, err := a.client.Sessions(cmd.Context(), opt)
				if err != nil {
					return err
				}
				out := []ipc.Session{}
				for _, s := range list {
					if match(s.Row()) {
						out = append(out, s)
					}
				}
				return a.printJSON(out)
			}
			rows, err := a.client.SessionRows(cmd.Context(), opt)
			if err != nil {
				return err
			}
			// Filtered in place: the rows are this call's own.
			kept := rows[:0]
			for _, r := range rows {
				if match(r) {
					kept = append(kept, r)
				}
			}
			if quiet {
				// One write: a reader that stops at the first line
				// (head -1) does not cut the listing off midway.
				b := make([]byte, 0, 10*len(kept))
				for _, s := range kept {
					b = append(append(b, s.ID...), '\n')
				}
				_, err := a.out.Write(b)
				return err
			}
			now := time.Now()
			if tmpl == nil {
				a.printTable(kept, now, noTrunc)
				return nil
			}
			return a.printFormat(tmpl, table, kept, now, noTrunc)
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&all, "all", "a", false, "include ended sessions")
	f.BoolVarP(&quiet, "quiet", "q", false, "print only ids")
	f.BoolVar(&chains, "chains", false, "list every session of a restart chain, not only its latest")
	f.BoolVar(&noTrunc, "no-trunc", false, "do not cut long names and commands")
	f.StringArrayVarP(&filters, "filter", "f", nil, "keep sessions matching KEY=VALUE (state, name, project, reason); repeatable")
	f.StringVar(&format, "format", "", "Go template for each row; \"table ...\" adds a header and aligns columns")
	f.BoolVar(&allContexts, "all-contexts", false, "every context's sessions, with a HOST column (--context a,b: those)")
	f.DurationVar(&hostTimeout, "host-timeout", 10*time.Second, "with several contexts: how long each host has to answer")
	return cmd
}

// psRow is a session as ps shows it: every field a column or a template
// may use, as text, escaped for the terminal.
type psRow struct {
	ID, Name, Project, ProjectDir, Command, State, Reason, PID, CPU, Mem string
	Uptime, Remaining, Restarts, LastActivity, Checkpoints               string
	// Agent is the agent's state and for how long ("waiting 4m"), Tokens
	// its model use ("12.3k"), Conversation its conversation's id.
	Agent, Tokens, Conversation string
	StartedAt                   time.Time
	EndedAt                     *time.Time
	Deadline                    time.Time

	// Worktree is the worktree's branch ("" for none), Port its port.
	Worktree, Port string
	// Host is the context the session is of, when ps lists several.
	Host string
}

// formatErr says what is wrong with a --format template in a user's
// words: a field that is none is named with the fields there are.
func formatErr(err error) error {
	if m := noField().FindStringSubmatch(err.Error()); m != nil {
		t := reflect.TypeFor[psRow]()
		fields := make([]string, t.NumField())
		for i := range fields {
			fields[i] = "." + t.Field(i).Name
		}
		return usageErr("--format: there is no field .%s; the fields are %s", m[1], strings.Join(fields, " "))
	}
	return usageErr("--format: %v", err)
}

// noField is text/template's error for a field a type does not have.
var noField = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`can't evaluate field (\w+) in type`) })

// psHeader names the columns, for the header line of a "table" format.
var psHeader = psRow{ID: "ID", Name: "NAME", Project: "PROJECT", ProjectDir: "PROJECT DIR", Command: "COMMAND",
	State: "STATE", Reason: "REASON", PID: "PID", CPU: "CPU %", Mem: "MEM", Uptime: "UPTIME", Remaining: "REMAINING",
	Restarts: "RESTARTS", LastActivity: "LAST ACTIVITY", Checkpoints: "CHECKPOINTS",
	Agent: "AGENT", Tokens: "TOKENS", Conversation: "CONVERSATION", Host: "HOST"}

func makeRow(s ipc.SessionRow, now time.Time, noTrunc bool) psRow {
	clip := func(v string, n int) string {
		if noTrunc {
			return v
		}
		return clipText(v, n)
	}
	end := now
	if s.EndedAt != nil {
		end = *s.EndedAt
	}
	r := psRow{
		ID: s.ID, Name: clip(ipc.TerminalLine(s.Name), 20), ProjectDir: ipc.TerminalLine(s.ProjectDir),
		Project: clip(ipc.TerminalLine(filepath.Base(s.ProjectDir)), 20),
		Command: clip(ipc.TerminalLine(strings.Join(s.Command, " ")), 40),
		State:   s.State, Reason: s.EndReason, PID: "-", CPU: "-", Mem: "-",
		Remaining: "-", Restarts: strconv.Itoa(s.Restarts),
		LastActivity: "-", Checkpoints: strconv.Itoa(s.Checkpoints),
		StartedAt: s.StartedAt, EndedAt: s.EndedAt, Deadline: s.Deadline,
	}
	if s.ProjectDir == "" {
		r.Project = "-"
	}
	if w := s.Worktree; w != nil {
		// The repository and the worktree's branch: parallel sessions of
		// one repository tell apart by it.
		r.Project = clip(ipc.TerminalLine(filepath.Base(w.Repo)+" ["+w.Branch+"]"), 40)
		r.Worktree, r.Port = ipc.TerminalLine(w.Branch), fmt.Sprint(w.Port)
	}
	if s.EndReason != "" && !ipc.Live(s.State) {
		r.State += " (" + ipc.EndLabel(s.EndReason) + ")"
	}
	if q := s.Queue; q != nil && s.State == ipc.StateQueued && q.Place > 0 {
		r.State += " #" + strconv.Itoa(q.Place)
	}
	r.timesAndUsage(&s, now, end)
	r.Agent, r.Tokens, r.Conversation = "-", "-", "-"
	if a := s.Agent; a != nil {
		r.Agent = a.State
		if a.StateSince != nil && a.State != ipc.AgentUnknown {
			r.Agent += " " + shortDuration(now.Sub(*a.StateSince))
		}
		if rt := a.Retrying; rt != nil && ipc.Live(s.State) {
			// Working, as far as its hooks say, but its API fails.
			r.Agent = "retrying " + shortDuration(now.Sub(rt.Since)) + " (" + clip(ipc.TerminalLine(rt.Reason), 32) + ")"
		}
		if l := a.Limit; l != nil && a.State == ipc.AgentLimited {
			r.Agent = "limited (" + ipc.TerminalLine(l.Words(now)) + ")"
		}
		if a.ConversationID != "" {
			r.Conversation = a.ConversationID
		}
		if ipc.Live(s.State) && a.State != ipc.AgentUnknown && a.State != "" {
			// The agent's state rides on the session's: running·waiting 4m.
			r.State += "·" + r.Agent
		}
	}
	if t := s.Tokens; t != nil {
		r.Tokens = shortCount(t.Total())
	}
	return r
}

// shortCount writes a count as ps does: 950, 12.3k, 4.1M.
func shortCount(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	default:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	}
}

// A column of ps's table: which field of a psRow it shows.
type psField int

const (
	fieldID psField = iota
	fieldName
	fieldProject
	fieldCommand
	fieldState
	fieldPID
	fieldCPU
	fieldMem
	fieldUptime
	fieldRemaining
	fieldRestarts
	fieldLastActivity
	fieldCheckpoints
	fieldTokens
	fieldHost
)

// psColumns are the default table's columns.
var psColumns = []psField{fieldID, fieldName, fieldProject, fieldCommand, fieldState, fieldPID, fieldCPU,
	fieldMem, fieldUptime, fieldRemaining, fieldRestarts, fieldLastActivity, fieldCheckpoints}

// field is the text of one of r's columns. A switch rather than a
// function per column: a row passed to a function value escapes, and a
// table of 100 rows would allocate each.
func (r *psRow) field(f psField) string {
	switch f {
	case fieldID:
		return r.ID
	case fieldName:
		return r.Name
	case fieldProject:
		return r.Project
	case fieldCommand:
		return r.Command
	case fieldState:
		return r.State
	case fieldPID:
		return r.PID
	case fieldCPU:
		return r.CPU
	case fieldMem:
		return r.Mem
	case fieldUptime:
		return r.Uptime
	case fieldRemaining:
		return r.Remaining
	case fieldRestarts:
		return r.Restarts
	case fieldLastActivity:
		return r.LastActivity
	case fieldCheckpoints:
		return r.Checkpoints
	case fieldTokens:
		return r.Tokens
	case fieldHost:
		return r.Host
	}
	return ""
}

// stateColumn is the default table's STATE column, which is coloured.
const stateColumn = 4

func (a *app) printTable(list []ipc.SessionRow, now time.Time, noTrunc bool) {
	a.printTableOf(list, nil, now, noTrunc)
}

// printTableOf is printTable with each row's host (hosts[i] for list[i]),
// in a HOST column first, when hosts is not nil.
func (a *app) printTableOf(list []ipc.SessionRow, hosts []string, now time.Time, noTrunc bool) {
	t := newTable(a.useColor())
	columns := psColumns
	if hosts != nil {
		columns = append([]psField{fieldHost}, psColumns...)
	}
	for _, s := range list {
		if s.Tokens != nil {
			// Agents' token use, when any listed session has one.
			columns = append(slices.Clone(columns), fieldTokens)
			break
		}
	}
	head := make([]string, len(columns))
	for i, col := range columns {
		head[i] = psHeader.field(col)
	}
	t.header(head...)
	state := stateColumn
	if hosts != nil {
		state++
	}
	// One allocation for every row's cells.
	all := make([]cell, len(list)*len(columns))
	t.rows = make([][]cell, 0, len(list))
	for i, s := range list {
		r := makeRow(s, now, noTrunc)
		if hosts != nil {
			r.Host = ipc.TerminalLine(hosts[i])
		}
		cells := all[i*len(columns) : (i+1)*len(columns) : (i+1)*len(columns)]
		for i, col := range columns {
			cells[i] = cell{text: r.field(col)}
		}
		cells[state].color = stateColor(s.State, s.EndReason)
		t.row(cells...)
	}
	t.write(a.out)
}

// printFormat prints rows through a template; with table, a header first
// and columns aligned at the tabs.
func (a *app) printFormat(tmpl *template.Template, table bool, list []ipc.SessionRow, now time.Time, noTrunc bool) error {
	return a.printFormatOf(tmpl, table, list, nil, now, noTrunc)
}

// printFormatOf is printFormat with each row's host in .Host.
func (a *app) printFormatOf(tmpl *template.Template, table bool, list []ipc.SessionRow, hosts []string, now time.Time, noTrunc bool) error {
	var lines []string
	render := func(r psRow) error {
		var b strings.Builder
		if err := tmpl.Execute(&b, r); err != nil {
			return formatErr(err)
		}
		lines = append(lines, b.String())
		return nil
	}
	if table {
		if err := render(psHeader); err != nil {
			return err
		}
	}
	for i, s := range list {
		r := makeRow(s, now, noTrunc)
		if hosts != nil {
			r.Host = ipc.TerminalLine(hosts[i])
		}
		if err := render(r); err != nil {
			return err
		}
	}
	if !table {
		for _, l := range lines {
			fmt.Fprintln(a.out, l)
		}
		return nil
	}
	t := newTable(false)
	for i, l := range lines {
		parts := strings.Split(l, "\t")
		if i == 0 {
			t.header(parts...)
			continue
		}
		cells := make([]cell, len(parts))
		for j, p := range parts {
			cells[j] = cell{text: p}
		}
		t.row(cells...)
	}
	t.write(a.out)
	return nil
}

// usesUsage reports whether a format shows the CPU or memory columns,
// which the daemon measures only when asked.
func usesUsage(format string) bool {
	return strings.Contains(format, ".CPU") || strings.Contains(format, ".Mem")
}

// unescapeTabs turns a literal \t in a shell-quoted format into a tab.
func unescapeTabs(s string) string { return strings.ReplaceAll(s, `\t`, "\t") }

// parseFilters turns --filter KEY=VALUE flags into a predicate: values of
// one key are alternatives, different keys must all match.
func parseFilters(flags []string) (func(ipc.SessionRow) bool, error) {
	byKey := map[string][]string{}
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		if !ok || v == "" {
			return nil, fmt.Errorf("--filter %q: want KEY=VALUE", f)
		}
		switch k {
		case "state":
			switch v {
			case ipc.StateQueued, ipc.StateStarting, ipc.StateRunning, ipc.StateWarned, ipc.StateStopping, ipc.StateEnded, ipc.StateFailed, "live":
			default:
				return nil, fmt.Errorf("--filter state=%s: want queued, starting, running, warned, stopping, ended, failed or live", v)
			}
		case "project":
			if abs, err := filepath.Abs(v); err == nil && strings.ContainsRune(v, '/') {
				if res, err := filepath.EvalSymlinks(abs); err == nil {
					abs = res
				}
				v = abs
			}
		case "name", "reason":
		default:
			return nil, fmt.Errorf("--filter %q: unknown key %q (state, name, project, reason)", f, k)
		}
		byKey[k] = append(byKey[k], v)
	}
	one := func(k, v string, s ipc.SessionRow) bool {
		switch k {
		case "state":
			return s.State == v || (v == "live" && ipc.Live(s.State))
		case "name":
			ok, _ := filepath.Match(v, s.Name)
			return ok
		case "project":
			if w := s.Worktree; w != nil && (w.Repo == v || filepath.Base(w.Repo) == v) {
				return true
			}
			return s.ProjectDir == v || filepath.Base(s.ProjectDir) == v
		case "reason":
			return s.EndReason == v
		}
		return false
	}
	return func(s ipc.SessionRow) bool {
		for k, vs := range byKey {
			any := false
			for _, v := range vs {
				any = any || one(k, v, s)
			}
			if !any {
				return false
			}
		}
		return true
	}, nil
}

// timesAndUsage sets the columns made of s's times and usage: UPTIME,
// REMAINING, PID, CPU %, MEM and LAST ACTIVITY, all written in one buffer
// and cut from one string (a listing has 100 rows, each of six).
func (r *psRow) timesAndUsage(s *ipc.SessionRow, now, end time.Time) {
	var buf [96]byte
	b := buf[:0]
	if s.State != ipc.StateQueued {
		// A queued session has not run yet: no uptime.
		b = ipc.AppendShortDuration(b, end.Sub(s.StartedAt))
	}
	var ends [5]int // of UPTIME, REMAINING, PID, CPU and MEM
	ends[0] = len(b)
	live := ipc.Live(s.State) && !s.Deadline.IsZero()
	if live {
		b = ipc.AppendShortDuration(b, s.Deadline.Sub(now))
		ends[1] = len(b)
		if s.PID > 0 {
			b = strconv.AppendInt(b, int64(s.PID), 10)
		}
		ends[2] = len(b)
		if s.Usage != nil {
			b = strconv.AppendFloat(b, s.Usage.CPUPercent, 'f', 1, 64)
			ends[3] = len(b)
			b = appendBytes(b, s.Usage.RSSBytes)
			ends[4] = len(b)
		}
	}
	ago := len(b)
	if s.LastActivity != nil {
		b = append(ipc.AppendShortDuration(b, now.Sub(*s.LastActivity)), " ago"...)
	}
	text := string(b)
	r.Uptime = text[:ends[0]]
	if r.Uptime == "" {
		r.Uptime = "-"
	}
	if live {
		r.Remaining = text[ends[0]:ends[1]]
		if s.PID > 0 {
			r.PID = text[ends[1]:ends[2]]
		}
		if s.Usage != nil {
			r.CPU, r.Mem = text[ends[2]:ends[3]], text[ends[3]:ends[4]]
		}
	}
	if s.LastActivity != nil {
		r.LastActivity = text[ago:]
	}
}

// appendBytes appends n as humanBytes writes it.
func appendBytes(b []byte, n int64) []byte {
	switch {
	case n < 1<<20:
		return append(strconv.AppendInt(b, n>>10, 10), 'K')
	case n < 1<<30:
		return append(strconv.AppendFloat(b, float64(n)/(1<<20), 'f', 1, 64), 'M')
	}
	return append(strconv.AppendFloat(b, float64(n)/(1<<30), 'f', 1, 64), 'G')
}

// humanBytes prints a size as ps columns want it: 812K, 14.2M, 1.1G.
func humanBytes(n int64) string { return string(appendBytes(make([]byte, 0, 8), n)) }
