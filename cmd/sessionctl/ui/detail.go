package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// tailView is the detail pane's output: the last lines of the selected
// session's output, followed as they are written.
type tailView struct {
	id    string
	f     *follower
	lines []string
	ended bool
	err   string
}

// tailLines is how many lines of output the pane asks for and keeps.
const tailLines = 500

// handoffResult and checkpointsResult are what the daemon answered for a
// session's handoff and a project's checkpoints; loading is a request in
// flight.
type handoffResult struct {
	h       *ipc.Handoff
	err     error
	loading bool
}

type checkpointsResult struct {
	list    []ipc.Checkpoint
	err     error
	loading bool
}

// wideDetail is the window width from which the record and the output
// stand side by side.
const wideDetail = 140

// label is the width of the record's labels.
const label = 9

// detail renders the pane of the selected session in width × height.
func (m *model) detail(s *ipc.Session, width, height int) []string {
	if height <= 0 {
		return nil
	}
	if width >= wideDetail {
		lw := min(width/2, 100)
		left := append(m.recordLines(s, lw), "")
		left = append(left, m.checkpointLines(s, lw, height-len(left))...)
		right := m.outputLines(width-lw-3, height)
		out := make([]string, height)
		for i := range out {
			var l, r string
			if i < len(left) {
				l = left[i]
			}
			if i < len(right) {
				r = right[i]
			}
			out[i] = fit(l, lw) + m.st.faint.Render(" │ ") + r
		}
		return out
	}
	rec := m.recordLines(s, width)
	if s.Checkpoints > 0 || m.checkpoints[s.ProjectDir].list != nil {
		rec = append(rec, m.checkpointLines(s, width, 1)...)
	}
	if len(rec) > height {
		return rec[:height]
	}
	return append(rec, m.outputLines(width, height-len(rec))...)
}

// field writes one line of the record: a label and its text.
func (m *model) field(name, text string, width int) string {
	return clip(m.st.faint.Render(fit(name, label))+text, width)
}

// clock prints a time of day, with the date when it is not today.
func (m *model) clock(t time.Time) string {
	t = t.In(m.loc)
	now := m.now.In(m.loc)
	if t.YearDay() != now.YearDay() || t.Year() != now.Year() {
		return t.Format("Jan 2 15:04:05")
	}
	return t.Format("15:04:05")
}

// recordLines are the record's facts, most useful first.
func (m *model) recordLines(s *ipc.Session, width int) []string {
	var out []string
	add := func(name, text string) { out = append(out, m.field(name, text, width)) }

	proj := line(s.ProjectDir)
	if w := s.Worktree; w != nil {
		proj += fmt.Sprintf("  worktree %s (%s)", line(w.Name), line(w.Branch))
		if w.Port > 0 {
			proj += fmt.Sprintf(" port %d", w.Port)
		}
	}
	add("project", proj)

	cmd := line(commandLine(s.Command))
	var extra []string
	if s.PID > 0 && ipc.Live(s.State) {
		extra = append(extra, fmt.Sprintf("pid %d", s.PID))
	}
	if s.TTY {
		extra = append(extra, "terminal")
	}
	if m.multiUser() {
		extra = append(extra, "user "+line(m.users[s.UID]))
	}
	if len(extra) > 0 {
		cmd += m.st.faint.Render("  " + strings.Join(extra, " · "))
	}
	add("command", cmd)

	if ipc.Live(s.State) {
		t := span(m.now.Sub(s.StartedAt))
		if !s.Deadline.IsZero() {
			t += " of " + span(s.Deadline.Sub(s.StartedAt)) + " · " + span(s.Deadline.Sub(m.now)) + " left"
		}
		if !s.WarnAt.IsZero() {
			if m.now.Before(s.WarnAt) {
				t += " · warns " + m.clock(s.WarnAt)
			} else {
				t += " · " + m.st.warn.Render("warned "+m.clock(s.WarnAt))
			}
		}
		if !s.Deadline.IsZero() {
			t += " · deadline " + m.clock(s.Deadline)
		}
		add("time", t)
	} else {
		t := endText(s)
		if s.EndedAt != nil {
			t = m.clock(*s.EndedAt) + " after " + span(s.EndedAt.Sub(s.StartedAt)) + " · " + t
		}
		add("ended", m.st.state(s).Render(t))
	}

	act := "-"
	if s.LastActivity != nil {
		act = span(m.now.Sub(*s.LastActivity)) + " ago"
	}
	if s.LastFileEdited != "" {
		act += " · edited " + line(s.LastFileEdited)
	}
	if n := len(s.FilesChanged) + s.FilesChangedMore; n > 0 {
		act += " · " + plural(n, "file") + " changed"
	}
	add("activity", act)

	if a := s.Agent; a != nil {
		t := line(a.Name)
		if a.State != "" {
			st := a.State
			if a.WaitingReason != "" && a.State == ipc.AgentWaiting {
				st += " (" + line(a.WaitingReason) + ")"
			}
			if r := a.Retrying; r != nil && ipc.Live(s.State) {
				st += " · retrying its API for " + span(m.now.Sub(r.Since)) + " (" + line(r.Reason) + ")"
			}
			if l := a.Limit; l != nil && a.State == ipc.AgentLimited {
				st += " (" + line(l.Words(m.now)) + ")"
				if !l.ContinueAt.IsZero() && l.Continue != ipc.ContinueNone {
					st += ", goes on at " + l.ContinueAt.Local().Format("15:04:05")
				}
			}
			if a.StateSince != nil {
				st += " for " + span(m.now.Sub(*a.StateSince))
			}
			t += " · " + m.st.agent(a.State).Render(st)
		}
		if a.Turns > 0 {
			t += " · " + plural(a.Turns, "turn")
		}
		if s.Tokens != nil {
			t += " · " + tokenText(s.Tokens)
		}
		add("agent", t)
	} else if s.Tokens != nil {
		add("tokens", tokenText(s.Tokens))
	}

	if t := m.memoryText(s); t != "" {
		add("memory", t)
	}

	if r := s.Report; r != nil {
		var parts []string
		if r.Task != "" {
			parts = append(parts, line(r.Task))
		}
		if r.Step != "" {
			parts = append(parts, "step "+line(r.Step))
		}
		if r.Progress != nil {
			parts = append(parts, fmt.Sprintf("%.0f%%", *r.Progress))
		}
		if r.Summary != "" {
			parts = append(parts, line(r.Summary))
		}
		if len(parts) > 0 {
			add("report", strings.Join(parts, " · "))
		}
	}
	if len(s.Blockers) > 0 {
		add("blocked", m.st.note.Render(line(s.Blockers[0].Question))+more(len(s.Blockers)-1))
	}
	if s.Error != "" {
		add("error", m.st.bad.Render(line(s.Error)))
	}
	if len(s.Warnings) > 0 {
		add("warning", m.st.warn.Render(line(s.Warnings[0]))+more(len(s.Warnings)-1))
	}
	if !ipc.Live(s.State) {
		out = append(out, m.handoffLines(s, width)...)
	}
	return out
}

func more(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" (+%d more)", n)
}

func tokenText(t *ipc.Tokens) string {
	s := tokens(t.Total()) + " tokens"
	switch {
	case t.CostKnown && t.CostUSD >= t.EstimatedUSD:
		s += fmt.Sprintf(" ($%.2f)", t.CostUSD)
	case t.EstimatedUSD > 0:
		s += fmt.Sprintf(" (~$%.2f)", t.EstimatedUSD)
	}
	return s
}

// handoffLines say what an ended session's handoff tells the next one.
func (m *model) handoffLines(s *ipc.Session, width int) []string {
	r, ok := m.handoffs[s.ID]
	switch {
	case !ok || r.loading:
		return []string{m.field("handoff", m.st.faint.Render("loading…"), width)}
	case r.err != nil:
		return []string{m.field("handoff", m.st.faint.Render("none: "+line(r.err.Error())), width)}
	}
	h := r.h
	var out []string
	add := func(name, text string) { out = append(out, m.field(name, text, width)) }
	if h.TaskAttempted != "" || h.TaskStatus != "" {
		t := line(h.TaskAttempted)
		if h.TaskStatus != "" {
			t += " · " + line(h.TaskStatus)
		}
		if h.TotalSteps > 0 {
			t += fmt.Sprintf(" · step %d/%d", h.CurrentStep, h.TotalSteps)
		}
		add("task", t)
	}
	if len(h.RecommendedNextSteps) > 0 {
		add("next", line(h.RecommendedNextSteps[0])+more(len(h.RecommendedNextSteps)-1))
	}
	if h.BlockedReason != "" {
		t := line(h.BlockedReason)
		if h.BlockedNeedsHuman {
			t += " (needs a person)"
		}
		add("blocked", m.st.note.Render(t))
	}
	var git []string
	if h.GitBranch != "" {
		git = append(git, line(h.GitBranch))
	}
	if h.GitCommitHash != "" {
		git = append(git, shortID(h.GitCommitHash))
	}
	if n := len(h.UncommittedFiles); n > 0 {
		git = append(git, plural(n, "uncommitted file"))
	}
	if h.Checkpoint != "" {
		git = append(git, "checkpoint "+shortID(h.Checkpoint))
	}
	if len(git) > 0 {
		add("git", strings.Join(git, " · "))
	}
	if s.HandoffPath != "" {
		add("handoff", m.st.faint.Render(line(s.HandoffPath)))
	}
	return out
}

// checkpointLines list the project's checkpoints, newest first, in at
// most n lines.
func (m *model) checkpointLines(s *ipc.Session, width, n int) []string {
	if n <= 0 {
		return nil
	}
	r := m.checkpoints[s.ProjectDir]
	head := fmt.Sprintf("%d this session", s.Checkpoints)
	if s.Restarts > 0 {
		head += " · " + plural(s.Restarts, "restart")
	}
	switch {
	case r.loading || (r.list == nil && r.err == nil):
		if n == 1 && s.LastCheckpoint != "" {
			head += " · last " + shortID(s.LastCheckpoint)
		}
		return []string{m.field("checkpts", head, width)}
	case r.err != nil:
		return []string{m.field("checkpts", head+" · "+m.st.faint.Render(line(r.err.Error())), width)}
	case len(r.list) == 0:
		return []string{m.field("checkpts", head+" · none in the project", width)}
	}
	entry := func(c ipc.Checkpoint) string {
		t := shortID(c.ID) + " " + m.clock(c.Time) + " " + plural(c.FilesChanged, "file")
		if c.Turn != "" {
			t += " · " + line(c.Turn)
		}
		return t
	}
	if n == 1 {
		return []string{m.field("checkpts", head+" · last "+entry(r.list[0]), width)}
	}
	out := []string{m.field("checkpts", head+" · "+plural(len(r.list), "checkpoint")+" in the project", width)}
	for _, c := range r.list {
		if len(out) >= n {
			break
		}
		out = append(out, m.field("", entry(c), width))
	}
	return out
}

// outputLines are the pane's output section: a rule, then the last lines.
func (m *model) outputLines(width, height int) []string {
	if height <= 0 {
		return nil
	}
	title := "output"
	s := m.sessions[m.tail.id]
	switch {
	case !m.online && m.tried:
		title += " (not followed: sessiond is not reachable)"
	case m.tail.err != "":
		title += " (" + line(m.tail.err) + ")"
	case m.tail.ended:
		title += " (ended)"
	case s != nil && ipc.Live(s.State):
		title += " (following)"
	}
	out := []string{m.st.faint.Render(rule(title, width))}
	n := height - 1
	lines := m.tail.lines
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 0 && n > 0 {
		return append(out, m.st.faint.Render("(no output yet)"))
	}
	for _, l := range lines {
		out = append(out, clip(l, width))
	}
	return out
}

// memoryText is what a contained session's cgroup says of its memory: "52
// MiB now", or at its end "peak 64 MiB · 1 OOM kill"; "" when nothing does.
func (m *model) memoryText(s *ipc.Session) string {
	mem := s.Memory
	if mem == nil {
		return ""
	}
	var parts []string
	if ipc.Live(s.State) && mem.CurrentBytes > 0 {
		parts = append(parts, memBytes(mem.CurrentBytes)+" now")
	}
	if mem.PeakBytes > 0 {
		parts = append(parts, "peak "+memBytes(mem.PeakBytes))
	}
	if mem.OOMKills > 0 {
		parts = append(parts, m.st.warn.Render(plural(int(mem.OOMKills), "OOM kill")))
	}
	return strings.Join(parts, " · ")
}

// memBytes is a byte count as a person reads it: 512 KiB, 64 MiB, 1.5 GiB.
func memBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
}
