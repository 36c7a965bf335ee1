package state

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Amounts of detail in context.md, which an agent reads whole at start.
const (
	contextFiles    = 20
	contextLogLines = 20
	contextCommits  = 10
)

// ContextInput is what BuildContext renders. Every field is optional except
// SessionID, ProjectDir and Now.
type ContextInput struct {
	SessionID  string
	ProjectDir string
	Deadline   time.Time
	WarnAt     time.Time
	// Previous is the handoff of the session before this one: what it
	// did. What is next comes from State alone.
	Previous *Handoff
	// State is the project's state as it stands at this start: progress
	// and next actions recomputed from the feature list as it is now.
	State *SessionState
	// NextTask is the feature the first next action names, for its steps.
	NextTask *Feature
	// Notes say what changed since the state was written (a feature list
	// that moved, a checkpoint restored).
	Notes []string
	// GitLog is recent history, one commit per line ("abc1234 subject").
	GitLog []string
	// Agent and Continues are the session's agent and the conversation it
	// continues ("" for a new one).
	Agent     string
	Continues string
	Now       time.Time
}

// BuildContext renders context.md: what a session needs to resume work, in
// the order it should read it: its own limits, what to look at first, the
// previous session, the project's state, the next task, progress and recent
// commits, and how to report back. The output depends only on in.
func BuildContext(in ContextInput) []byte {
	var b bytes.Buffer
	b.WriteString("# Session context\n\n")
	fmt.Fprintf(&b, "Session %s in %s, started %s.\n", codeSpan(in.SessionID), codeSpan(in.ProjectDir), in.Now.Format(time.RFC3339))
	if !in.Deadline.IsZero() {
		fmt.Fprintf(&b, "Deadline: %s (%s from the start).\n", in.Deadline.Format(time.RFC3339), humanDuration(in.Deadline.Sub(in.Now)))
	}
	if !in.WarnAt.IsZero() {
		fmt.Fprintf(&b, "Warning at: %s. Then `%s/%s` appears: finish the current step, commit, and report where you are.\n",
			in.WarnAt.Format(time.RFC3339), DirName, WarningFile)
	}

	if in.Continues != "" {
		fmt.Fprintf(&b, "This session continues %s conversation %s: what was said in it is still there.\n", inline(in.Agent), codeSpan(in.Continues))
	}
	for _, n := range in.Notes {
		fmt.Fprintf(&b, "\n> Note: %s\n", inline(n))
	}
	if in.Previous == nil && (in.State == nil || in.State.LastSession == nil) {
		b.WriteString("\nNo earlier session is recorded for this project.\n")
	}
	if h := in.Previous; h != nil && len(h.Warnings) > 0 {
		b.WriteString("\n## Look at first\n\n")
		for _, w := range h.Warnings {
			fmt.Fprintf(&b, "- %s\n", inline(w))
		}
	}
	if h := in.Previous; h != nil {
		writePrevious(&b, h, in.Now, in.State)
	}
	if s := in.State; s != nil {
		writeState(&b, s, in.NextTask)
	}
	if len(in.GitLog) > 0 {
		b.WriteString("\n## Recent commits\n\n")
		var log []string
		for _, l := range in.GitLog[:min(len(in.GitLog), contextCommits)] {
			log = append(log, inline(l))
		}
		writeFenced(&b, "", log)
	}
	b.WriteString("\n## Reporting\n\n")
	b.WriteString("Record what only you know, before the session ends and whenever it changes:\n\n")
	b.WriteString("    sessionctl report --summary \"...\" --next \"...\" --progress PCT --task \"...\" --step N/M --status in_progress\n\n")
	b.WriteString("Add `--blocker \"question\"` for anything that needs a human; `--resolve ID` once it is answered.\n")
	return b.Bytes()
}

// WriteContext builds the context for in and writes it to the project's
// .sessiond/context.md atomically, mode 0600, creating .sessiond if needed.
// It is not synced: the session it is for reads it from memory, and a crash
// of the machine ends that session; the next start writes it again before
// anyone reads it.
func (p *Project) WriteContext(in ContextInput) error {
	if err := p.writeStateReusingWith(ContextFile, BuildContext(in), visible); err != nil {
		return fmt.Errorf("write context: %w", err)
	}
	return nil
}

// WriteContext builds the context for in and writes it to project's
// context.md (ContextPath) with the caller's own rights; see
// Project.WriteContext.
func WriteContext(project string, in ContextInput) error {
	p, err := ensureProject(project)
	if err != nil {
		return fmt.Errorf("write context: %w", err)
	}
	return p.WriteContext(in)
}

func writePrevious(b *bytes.Buffer, h *Handoff, now time.Time, st *SessionState) {
	b.WriteString("\n## Previous session\n\n")
	ended := "ended"
	if h.EndReason != "" {
		ended = "ended: " + inline(h.EndReason)
	}
	fmt.Fprintf(b, "- Session %s, %s", codeSpan(h.SessionID), ended)
	if !h.EndedAt.IsZero() {
		fmt.Fprintf(b, " at %s (%s)", h.EndedAt.Format(time.RFC3339), RelativeTime(h.EndedAt, now))
	}
	switch {
	case h.Signal != "":
		fmt.Fprintf(b, ", killed by %s", inline(h.Signal))
	case h.ExitCode != nil:
		fmt.Fprintf(b, ", exit code %d", *h.ExitCode)
	default:
		b.WriteString(", exit status unknown")
	}
	b.WriteString("\n")
	if h.TaskAttempted != "" {
		fmt.Fprintf(b, "- Task: %s", inline(h.TaskAttempted))
		var detail []string
		if h.TaskStatus != "" {
			detail = append(detail, inline(h.TaskStatus))
		}
		if h.TotalSteps > 0 {
			detail = append(detail, fmt.Sprintf("step %d of %d", h.CurrentStep, h.TotalSteps))
		}
		if len(detail) > 0 {
			fmt.Fprintf(b, " (%s)", strings.Join(detail, ", "))
		}
		b.WriteString("\n")
	}
	if h.LastActionTaken != "" {
		fmt.Fprintf(b, "- Last action: %s\n", inline(h.LastActionTaken))
	}
	if h.BlockedReason != "" {
		if resolvedSince(h.BlockedReason, st) {
			fmt.Fprintf(b, "- Was blocked: %s (resolved since)\n", inline(h.BlockedReason))
		} else {
			fmt.Fprintf(b, "- Blocked: %s", inline(h.BlockedReason))
			if h.BlockedNeedsHuman {
				b.WriteString(" (needs a human)")
			}
			b.WriteString("\n")
		}
	}
	if h.GitBranch != "" || h.GitCommitHash != "" {
		b.WriteString("- Git:")
		if h.GitBranch != "" {
			fmt.Fprintf(b, " branch %s", codeSpan(h.GitBranch))
		}
		if h.GitCommitHash != "" {
			fmt.Fprintf(b, " at %s", inline(shortHash(h.GitCommitHash)))
		}
		b.WriteString("\n")
	}
	if h.Checkpoint != "" {
		fmt.Fprintf(b, "- Last checkpoint: %s (%s brings the tree back to it)\n", codeSpan(shortHash(h.Checkpoint)), codeSpan("sessionctl restore . "+h.Checkpoint))
	}
	writeFiles(b, "Uncommitted files", h.UncommittedFiles)
	writeFiles(b, "Files changed", h.FilesChanged)
	if h.LastFileEdited != "" {
		fmt.Fprintf(b, "- Last file edited: %s\n", codeSpan(h.LastFileEdited))
	}
	if h.DevServerWasRunning {
		b.WriteString("- A dev server was running; start it again if you need it.\n")
	}
	if h.Restarts > 0 {
		fmt.Fprintf(b, "- Restarts: %d\n", h.Restarts)
	}
	if len(h.LogTail) > 0 && h.EndReason != "complete" {
		b.WriteString("\n### End of its output\n\n")
		writeFenced(b, "text", h.LogTail[max(0, len(h.LogTail)-contextLogLines):])
	}
}

// blockerRef finds the ids a handoff's blocked_reason names ("question
// (#3)").
var blockerRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\(#(\d+)\)`) })

// resolvedSince reports whether every blocker a handoff's blocked_reason
// names is no longer open in the session state st: resolved after the
// session ended (sessionctl report --resolve from outside).
func resolvedSince(reason string, st *SessionState) bool {
	refs := blockerRef().FindAllStringSubmatch(reason, -1)
	if st == nil || len(refs) == 0 {
		return false
	}
	for _, m := range refs {
		id, _ := strconv.Atoi(m[1])
		if slices.ContainsFunc(st.ActiveBlockers, func(b Blocker) bool { return b.ID == id }) {
			return false
		}
	}
	return true
}

// writeState writes where the project stands — the one place context.md
// says what is next, how far along it is and what blocks it.
func writeState(b *bytes.Buffer, s *SessionState, next *Feature) {
	b.WriteString("\n## Where the project stands\n\n")
	if l := s.LastSession; l != nil && l.Summary != "" {
		fmt.Fprintf(b, "Last summary: %s\n", inline(l.Summary))
	}
	if s.SessionsSince > 0 {
		fmt.Fprintf(b, "Since then: %s that did nothing (%s).\n", plural(s.SessionsSince, "session"), inline(runEnds(s.RecentRuns)))
	}
	b.WriteString(progressLine(s) + "\n")
	if len(s.NextActions) > 0 {
		b.WriteString("\n### Next\n\n")
		for i, a := range s.NextActions {
			fmt.Fprintf(b, "%d. %s\n", i+1, inline(a))
		}
	}
	if f := next; f != nil && len(f.Steps) > 0 {
		fmt.Fprintf(b, "\nSteps of %s:\n", inline(featureRef(*f)))
		for i, st := range f.Steps {
			fmt.Fprintf(b, "%d. %s\n", i+1, inline(st))
		}
	}
	if len(s.ActiveBlockers) > 0 {
		b.WriteString("\n### Open blockers\n\n")
		for _, bl := range s.ActiveBlockers {
			fmt.Fprintf(b, "- #%d ", bl.ID)
			if bl.Priority != "" {
				fmt.Fprintf(b, "[%s] ", inline(bl.Priority))
			}
			b.WriteString(inline(bl.Question) + "\n")
		}
		b.WriteString("\nResolve one once answered: `sessionctl report --resolve ID`.\n")
	}
	if s.CurrentPlan != "" {
		// Fenced, so that a plan's lines cannot pass for this file's own
		// headings or rules.
		b.WriteString("\n### Plan\n\n")
		writeFenced(b, "text", strings.Split(strings.TrimSpace(s.CurrentPlan), "\n"))
	}
}

// progressLine is "Progress: 68% (27/40 tasks complete)", the same line in
// the restore summary and context.md.
func progressLine(s *SessionState) string {
	pct := s.ProgressPct
	if math.IsNaN(pct) || math.IsInf(pct, 0) {
		pct = 0
	}
	// Floor, as the seed shows 68.5 as "68%": never claim more than was done.
	line := fmt.Sprintf("Progress: %d%%", int(math.Floor(math.Max(0, math.Min(pct, 100)))))
	if s.TasksTotal > 0 {
		line += fmt.Sprintf(" (%d/%d tasks complete)", s.TasksDone, s.TasksTotal)
	}
	return line
}

// runEnds says how runs ended: "complete, timeout".
func runEnds(runs []Run) string {
	var ends []string
	for _, r := range runs {
		ends = append(ends, "ended "+r.EndReason)
	}
	return strings.Join(ends, ", ")
}

// featureRef is "login (Task #F2)", as next actions name a feature, or
// the description alone.
func featureRef(f Feature) string {
	if f.Key().IsZero() {
		return f.Description
	}
	return f.Description + " (Task #" + f.Key().String() + ")"
}

func writeFiles(b *bytes.Buffer, title string, files []string) {
	if len(files) == 0 {
		return
	}
	shown := files[:min(len(files), contextFiles)]
	quoted := make([]string, len(shown))
	for i, f := range shown {
		quoted[i] = codeSpan(f)
	}
	fmt.Fprintf(b, "- %s (%d): %s", title, len(files), strings.Join(quoted, ", "))
	if len(files) > len(shown) {
		fmt.Fprintf(b, " and %d more", len(files)-len(shown))
	}
	b.WriteString("\n")
}

// writeFenced writes lines in a code block whose fence is longer than any
// run of backticks in them, so that output cannot close it early; a line
// holding line breaks becomes several, and control characters are escaped
// (see TerminalText).
func writeFenced(b *bytes.Buffer, lang string, lines []string) {
	var out []string
	for _, l := range lines {
		for _, part := range strings.Split(strings.TrimRight(l, "\r\n"), "\n") {
			out = append(out, TerminalText(strings.TrimSuffix(part, "\r")))
		}
	}
	longest := 0
	for _, l := range out {
		run := 0
		for _, c := range l {
			if c == '`' {
				run++
				longest = max(longest, run)
			} else {
				run = 0
			}
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	b.WriteString(fence + lang + "\n")
	for _, l := range out {
		b.WriteString(l + "\n")
	}
	b.WriteString(fence + "\n")
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// humanDuration writes d as "4h", "3h30m", "45m" (rounded to the minute)
// or, under a minute, "40s".
func humanDuration(d time.Duration) string {
	if d < 0 {
		return "-" + humanDuration(-d)
	}
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
	}
	d = d.Round(time.Minute)
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	switch {
	case h == 0:
		return fmt.Sprintf("%dm", m)
	case m == 0:
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh%dm", h, m)
}
