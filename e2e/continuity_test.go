package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue "session continuity": the handoff for every end, crash recovery
// and adoption, the feature list, reports, the restore summary, corrupt
// files, permissions, context, the project API, and no secrets on disk.

// handoffFields are the keys of handoff.json (DESIGN §5.5).
var handoffFields = []string{"session_id", "project_dir", "command", "started_at", "ended_at",
	"end_reason", "exit_code", "signal", "task_attempted", "task_status", "current_step",
	"total_steps", "last_action_taken", "blocked_reason", "blocked_needs_human",
	"recommended_next_steps", "warnings", "git_commit_hash", "git_branch", "uncommitted_files",
	"checkpoint", "files_changed", "last_file_edited", "dev_server_was_running", "restarts", "log_tail"}

// handoff is handoff.json, decoded independently of the product's types.
type handoff struct {
	SessionID            string    `json:"session_id"`
	ProjectDir           string    `json:"project_dir"`
	Command              []string  `json:"command"`
	StartedAt            time.Time `json:"started_at"`
	EndedAt              time.Time `json:"ended_at"`
	EndReason            string    `json:"end_reason"`
	ExitCode             *int      `json:"exit_code"`
	Signal               string    `json:"signal"`
	TaskAttempted        string    `json:"task_attempted"`
	TaskStatus           string    `json:"task_status"`
	CurrentStep          int       `json:"current_step"`
	TotalSteps           int       `json:"total_steps"`
	BlockedReason        string    `json:"blocked_reason"`
	BlockedNeedsHuman    bool      `json:"blocked_needs_human"`
	RecommendedNextSteps []string  `json:"recommended_next_steps"`
	Warnings             []string  `json:"warnings"`
	GitCommitHash        string    `json:"git_commit_hash"`
	GitBranch            string    `json:"git_branch"`
	LogTail              []string  `json:"log_tail"`
}

// sessionState is session_state.json.
type sessionState struct {
	LastSession *struct {
		Summary        string    `json:"summary"`
		CompletedTasks []int     `json:"completed_tasks"`
		Timestamp      time.Time `json:"timestamp"`
		SessionID      string    `json:"session_id"`
		EndReason      string    `json:"end_reason"`
	} `json:"last_session"`
	NextActions    []string `json:"next_actions"`
	CurrentPlan    string   `json:"current_plan"`
	ActiveBlockers []struct {
		ID       int    `json:"id"`
		Question string `json:"question"`
		Priority string `json:"priority"`
	} `json:"active_blockers"`
	ProgressPct float64 `json:"progress_pct"`
	TasksDone   int     `json:"tasks_done"`
	TasksTotal  int     `json:"tasks_total"`
}

// readHandoff reads the project's handoff.json, checking that every field
// of §5.5 is present.
func readHandoff(t testing.TB, dir string) handoff {
	t.Helper()
	data := readProjectFile(t, dir, "handoff.json")
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatalf("handoff.json: %v\n%s", err, data)
	}
	for _, f := range handoffFields {
		if _, ok := raw[f]; !ok {
			t.Errorf("handoff.json lacks %q", f)
		}
	}
	var h handoff
	if err := json.Unmarshal(data, &h); err != nil {
		t.Fatalf("handoff.json: %v\n%s", err, data)
	}
	return h
}

func readSessionState(t testing.TB, dir string) sessionState {
	t.Helper()
	data := readProjectFile(t, dir, "session_state.json")
	var st sessionState
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatalf("session_state.json: %v\n%s", err, data)
	}
	return st
}

func containsAny(list []string, sub string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.Contains(s, sub) })
}

func TestContinuityEndReasons(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	for _, tc := range []struct {
		reason  string
		args    []string
		stop    bool
		code    *int
		signal  bool
		warning string
	}{
		{reason: "complete", args: []string{"--", "true"}, code: intPtr(0)},
		{reason: "error", args: []string{"--", "bash", "-c", "echo failing; exit 3"}, code: intPtr(3), warning: "exit 3"},
		{reason: "timeout", args: []string{"--timeout", "2s", "--warn-before", "1s", "--stop-grace", "1s", "--", "sleep", "1000"}, signal: true, warning: "deadline"},
		{reason: "idle", args: []string{"--idle-timeout", "1s", "--stop-grace", "1s", "--", "sleep", "1000"}, signal: true, warning: "1s"},
		{reason: "interrupted", args: []string{"--stop-grace", "1s", "--", "sleep", "1000"}, stop: true, signal: true},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			t.Parallel()
			d := d.with(t)
			repo := newCkptRepo(t)
			repo.write("main.go", "package main\n")
			repo.commitAll("initial")
			head := repo.git("rev-parse", "HEAD")
			id := d.start(append([]string{repo.dir}, tc.args...)...)
			if tc.stop {
				d.waitState(id, 10*time.Second, "running")
				out := d.mustCtl("stop", id)
				if !strings.Contains(out, filepath.Join(repo.dir, ".sessiond", "handoff.json")) {
					t.Errorf("stop output does not name the handoff:\n%s", out)
				}
			}
			rec := d.waitEnded(id, 15*time.Second)
			if rec.EndReason != tc.reason {
				t.Fatalf("end_reason %q, want %q", rec.EndReason, tc.reason)
			}
			h := readHandoff(t, repo.dir)
			if h.SessionID != id || h.EndReason != tc.reason || h.ProjectDir != repo.dir || len(h.Command) == 0 {
				t.Errorf("handoff: session %s, end_reason %s, project_dir %s, command %q; want %s, %s, %s",
					h.SessionID, h.EndReason, h.ProjectDir, h.Command, id, tc.reason, repo.dir)
			}
			if h.StartedAt.IsZero() || h.EndedAt.Before(h.StartedAt) {
				t.Errorf("handoff times: started %s, ended %s", h.StartedAt, h.EndedAt)
			}
			if tc.code != nil && (h.ExitCode == nil || *h.ExitCode != *tc.code) {
				t.Errorf("handoff exit_code %v, want %d", h.ExitCode, *tc.code)
			}
			if tc.signal && h.Signal == "" {
				t.Errorf("handoff signal is empty for a session ended by a signal")
			}
			if h.GitCommitHash != head || h.GitBranch != "main" {
				t.Errorf("handoff git: %s on %q, want %s on main", h.GitCommitHash, h.GitBranch, head)
			}
			if tc.warning != "" && !containsAny(h.Warnings, tc.warning) {
				t.Errorf("handoff warnings %q: want one mentioning %q", h.Warnings, tc.warning)
			}
			if tc.reason == "error" && !slices.Contains(h.LogTail, "failing") {
				t.Errorf("handoff log_tail %q: want the command's output", h.LogTail)
			}
			// The archive in the state dir is the same handoff.
			archive, err := os.ReadFile(filepath.Join(d.stateDir, "sessions", id, "handoff.json"))
			if err != nil || !bytes.Equal(archive, readProjectFile(t, repo.dir, "handoff.json")) {
				t.Errorf("archived handoff differs from the project's (%v)", err)
			}
			st := readSessionState(t, repo.dir)
			if st.LastSession == nil || st.LastSession.SessionID != id || st.LastSession.EndReason != tc.reason {
				t.Errorf("session_state last_session: %+v, want session %s ended %s", st.LastSession, id, tc.reason)
			}
			if p := string(readProjectFile(t, repo.dir, "progress.md")); !strings.Contains(p, "## Session 1 - ") || !strings.Contains(p, "ended: "+tc.reason) {
				t.Errorf("progress.md: want a Session 1 entry ended: %s\n%s", tc.reason, p)
			}
			if fileExists(filepath.Join(repo.dir, ".sessiond", "session.lock")) {
				t.Errorf("session.lock left after the end")
			}
		})
	}
}

func intPtr(n int) *int { return &n }

func TestContinuityCrashRecovery(t *testing.T) {
	t.Parallel()

	t.Run("process gone: crashed", func(t *testing.T) {
		t.Parallel()
		stateDir, sock := filepath.Join(t.TempDir(), "state"), newSocketPath(t)
		d := startDaemonAt(t, stateDir, sock)
		repo := newCkptRepo(t)
		repo.write("main.go", "package main\n")
		repo.commitAll("initial")
		id := d.start(repo.dir, "--stop-grace", "1s", "--", "sleep", "1000")
		pid := d.inspect(id).PID
		killOnCleanup(t, pid)
		// The lock follows the reply to the start.
		waitFor(t, 5*time.Second, "session.lock while the session runs", func() (bool, string) {
			return fileExists(filepath.Join(repo.dir, ".sessiond", "session.lock")), ""
		})
		d.kill9()
		if !alive(pid) {
			t.Fatalf("kill -9 of the daemon killed the session %d", pid)
		}
		if err := syscallKill(pid); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the session's process to die", func() (bool, string) { return !alive(pid), "" })

		d2 := startDaemonAt(t, stateDir, sock)
		rec := d2.waitEnded(id, 15*time.Second)
		if rec.State != "ended" || rec.EndReason != "crashed" {
			t.Errorf("after the restart: state %s, end_reason %q; want ended, crashed", rec.State, rec.EndReason)
		}
		h := readHandoff(t, repo.dir)
		if h.SessionID != id || h.EndReason != "crashed" {
			t.Errorf("handoff: session %s, end_reason %s; want %s, crashed", h.SessionID, h.EndReason, id)
		}
		if !containsAny(h.Warnings, "not observed") {
			t.Errorf("handoff warnings %q: want one saying the end was not observed", h.Warnings)
		}
		if fileExists(filepath.Join(repo.dir, ".sessiond", "session.lock")) {
			t.Errorf("session.lock left after the crashed session was ended")
		}
		if p := string(readProjectFile(t, repo.dir, "progress.md")); !strings.Contains(p, "ended: crashed") {
			t.Errorf("progress.md: want the crashed end\n%s", p)
		}
	})

	t.Run("process alive: adopted", func(t *testing.T) {
		t.Parallel()
		stateDir, sock := filepath.Join(t.TempDir(), "state"), newSocketPath(t)
		d := startDaemonAt(t, stateDir, sock)
		dir := project(t)
		id := d.start(dir, "--stop-grace", "1s", "--", "sleep", "1000")
		pid := d.inspect(id).PID
		killOnCleanup(t, pid)
		d.kill9()

		d2 := startDaemonAt(t, stateDir, sock)
		rec := d2.inspect(id)
		if rec.State != "running" || rec.PID != pid || !alive(pid) {
			t.Fatalf("after the restart: state %s, pid %d (was %d, alive %v); want running, adopted", rec.State, rec.PID, pid, alive(pid))
		}
		if got := psColumn(t, d2.mustCtl("ps"), id, "STATE"); got != "running" {
			t.Errorf("ps after adoption: state %q, want running", got)
		}
		out := d2.mustCtl("stop", id)
		if !strings.Contains(out, filepath.Join(dir, ".sessiond", "handoff.json")) {
			t.Errorf("stop output does not name the handoff:\n%s", out)
		}
		if alive(pid) {
			t.Errorf("adopted session %d alive after stop", pid)
		}
		end := d2.inspect(id)
		if end.State != "ended" || end.EndReason != "interrupted" {
			t.Errorf("adopted session after stop: %s (%s), want ended (interrupted)", end.State, end.EndReason)
		}
		h := readHandoff(t, dir)
		if h.SessionID != id || h.EndReason != "interrupted" {
			t.Errorf("handoff: session %s, end_reason %s; want %s, interrupted", h.SessionID, h.EndReason, id)
		}
	})
}

// featureListJSON is a feature list in object form; passes1 says whether
// feature 1 passes.
func featureListJSON(passes1 bool) string {
	p := "false"
	if passes1 {
		p = "true"
	}
	return `{"features": [
  {"id": 1, "description": "Login page", "priority": "high", "passes": ` + p + `},
  {"id": 2, "description": "Audit log export", "priority": "low", "passes": false},
  {"id": 3, "description": "Password reset", "priority": "medium", "passes": false}
]}
`
}

func TestContinuityFeatureList(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	writeFile(t, filepath.Join(dir, "feature_list.json"), featureListJSON(false))
	writeFile(t, filepath.Join(dir, "passing.json"), featureListJSON(true))
	flip := script(t, dir, "flip.sh", "cp passing.json feature_list.json\n")
	id := d.start(dir, "--", flip)
	if rec := d.waitEnded(id, 10*time.Second); rec.EndReason != "complete" {
		t.Fatalf("flip.sh ended %s", rec.EndReason)
	}
	st := readSessionState(t, dir)
	if math.Abs(st.ProgressPct-33.3) > 0.05 && st.ProgressPct != 33 {
		t.Errorf("progress_pct %v, want 33.3", st.ProgressPct)
	}
	if st.TasksDone != 1 || st.TasksTotal != 3 {
		t.Errorf("tasks %d/%d, want 1/3", st.TasksDone, st.TasksTotal)
	}
	if st.LastSession == nil || !slices.Equal(st.LastSession.CompletedTasks, []int{1}) {
		t.Errorf("last_session.completed_tasks: %+v, want [1]", st.LastSession)
	}
	if len(st.NextActions) < 2 || !strings.Contains(st.NextActions[0], "Password reset") || !strings.Contains(st.NextActions[1], "Audit log export") {
		t.Errorf("next_actions %q: want Password reset (medium) before Audit log export (low)", st.NextActions)
	}
	for _, a := range st.NextActions {
		if strings.Contains(a, "Login page") {
			t.Errorf("next_actions %q holds the passing feature", st.NextActions)
		}
	}
	h := readHandoff(t, dir)
	if h.TaskAttempted != "Login page" || h.TaskStatus != "completed" {
		t.Errorf("handoff task: %q (%s), want Login page (completed)", h.TaskAttempted, h.TaskStatus)
	}

	first := readProjectFile(t, dir, "progress.md")
	entry := string(first)
	if !regexp.MustCompile(`(?m)^## Session 1 - \d{4}-\d\d-\d\d \d\d:\d\d$`).MatchString(entry) {
		t.Errorf("progress.md: want a '## Session 1 - DATE' heading\n%s", entry)
	}
	if i := strings.Index(entry, "### Completed"); i < 0 || !strings.Contains(entry[i:], "Login page") {
		t.Errorf("progress.md: want ### Completed listing Login page\n%s", entry)
	}
	golden(t, "continuity_state_features.golden", normalizeState(d.mustCtl("state", dir), id))

	id2 := d.start(dir, "--", "true")
	d.waitEnded(id2, 10*time.Second)
	second := readProjectFile(t, dir, "progress.md")
	if !bytes.HasPrefix(second, first) {
		t.Errorf("the second session rewrote the first entry of progress.md:\nbefore:\n%s\nafter:\n%s", first, second)
	}
	rest := string(second[len(first):])
	if !strings.Contains(rest, "## Session 2 - ") || strings.Contains(rest, "## Session 1 ") {
		t.Errorf("progress.md: want a Session 2 entry appended, got\n%s", rest)
	}
	if !strings.Contains(rest, id2) {
		t.Errorf("the Session 2 entry does not name session %s:\n%s", id2, rest)
	}
}

// normalizeState replaces a session id and run-dependent durations in a
// restore summary.
func normalizeState(s string, ids ...string) string {
	for _, id := range ids {
		s = strings.ReplaceAll(s, id, "<SESSION_ID>")
	}
	return regexp.MustCompile(`after \d+s`).ReplaceAllString(s, "after <DURATION>")
}

// reportScript reports from inside the session, first a bad report whose
// exit code and message go to bad.code and bad.err.
const reportScript = `sessionctl report --progress 150 2> bad.err
echo $? > bad.code
sessionctl report --summary "Built the parser for config files" --next "Wire the parser into main" \
	--next "Write parser tests" --blocker "Which TOML version must we support?" --progress 50 \
	--task "Config parser" --step 2/5 --status in_progress > report.out 2>&1
echo $? >> report.out
`

func TestContinuityReport(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	run := script(t, dir, "run.sh", reportScript)
	id := d.start(dir, "--env", "PATH="+binDir+":/usr/bin:/bin", "--", run)
	if rec := d.waitEnded(id, 10*time.Second); rec.EndReason != "complete" {
		t.Fatalf("run.sh ended %s", rec.EndReason)
	}
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	if got := read("report.out"); !strings.HasSuffix(got, "\n0\n") {
		t.Fatalf("sessionctl report from inside the session failed:\n%s", got)
	}
	if code, msg := strings.TrimSpace(read("bad.code")), read("bad.err"); code != "2" || !strings.Contains(msg, "progress") || !strings.Contains(msg, "100") {
		t.Errorf("report --progress 150: exit %s, message %q; want exit 2 (usage) saying progress is 0 to 100", code, msg)
	}

	h := readHandoff(t, dir)
	if h.TaskAttempted != "Config parser" || h.CurrentStep != 2 || h.TotalSteps != 5 || h.TaskStatus != "in_progress" {
		t.Errorf("handoff task: %q step %d/%d status %s; want Config parser 2/5 in_progress", h.TaskAttempted, h.CurrentStep, h.TotalSteps, h.TaskStatus)
	}
	if h.BlockedReason != "Which TOML version must we support? (#1)" || !h.BlockedNeedsHuman {
		t.Errorf("handoff blocked_reason %q (needs human %v)", h.BlockedReason, h.BlockedNeedsHuman)
	}
	next := []string{"Wire the parser into main", "Write parser tests"}
	if !slices.Equal(h.RecommendedNextSteps, next) {
		t.Errorf("handoff recommended_next_steps %q, want %q", h.RecommendedNextSteps, next)
	}
	st := readSessionState(t, dir)
	if st.LastSession == nil || st.LastSession.Summary != "Built the parser for config files" {
		t.Errorf("session_state last_session: %+v, want the reported summary", st.LastSession)
	}
	if !slices.Equal(st.NextActions, next) {
		t.Errorf("session_state next_actions %q, want %q", st.NextActions, next)
	}
	if len(st.ActiveBlockers) != 1 || st.ActiveBlockers[0].Question != "Which TOML version must we support?" {
		t.Errorf("session_state active_blockers %+v", st.ActiveBlockers)
	}
	if st.ProgressPct != 50 {
		t.Errorf("session_state progress_pct %v, want 50 (the bad report of 150 must not count)", st.ProgressPct)
	}

	// Outside a session: no SESSIOND_SESSION_ID is a usage error.
	r := d.ctl("report", "--summary", "from outside")
	if r.code != 2 || !strings.Contains(r.stderr, "SESSIOND_SESSION_ID") {
		t.Errorf("report without SESSIOND_SESSION_ID: want exit 2 naming it\n%s", r)
	}
}

func TestContinuityRestoreSummary(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)

	fresh := project(t)
	r := d.ctl("start", fresh, "--", "true")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "🚀 Starting new session...\n") {
		t.Fatalf("start in a project without state: want it to print Starting new session\n%s", r)
	}
	d.waitEnded(strings.TrimSpace(strings.TrimPrefix(r.stdout, "🚀 Starting new session...\n")), 10*time.Second)

	dir := project(t)
	run := script(t, dir, "run.sh", reportScript)
	id := d.start(dir, "--env", "PATH="+binDir+":/usr/bin:/bin", "--", run)
	d.waitEnded(id, 10*time.Second)

	summary := d.mustCtl("state", dir)
	golden(t, "continuity_state.golden", normalizeState(summary, id))
	for _, want := range []string{"📋 Restoring session...", "Summary: Built the parser for config files", "Time: just now",
		"  1. Wire the parser into main\n  2. Write parser tests", "Progress: 50%\n", "Blockers:"} {
		if !strings.Contains(summary, want) {
			t.Errorf("sessionctl state: want %q in\n%s", want, summary)
		}
	}

	var st sessionState
	if out := d.mustCtl("--json", "state", dir); json.Unmarshal([]byte(out), &st) != nil || st.LastSession == nil || st.LastSession.SessionID != id || st.ProgressPct != 50 {
		t.Errorf("state --json: want the session state of %s\n%s", id, out)
	}

	// start prints the same summary, then the id.
	r = d.ctl("start", dir, "--", "true")
	if r.code != 0 {
		t.Fatalf("start:\n%s", r)
	}
	id2 := strings.TrimSpace(r.stdout[strings.LastIndex(strings.TrimRight(r.stdout, "\n"), "\n")+1:])
	if !validID(id2) || !strings.HasPrefix(r.stdout, summary) {
		t.Errorf("start in a project with state: want the restore summary then the id; got\n%s\nwant summary\n%s", r.stdout, summary)
	}
	d.waitEnded(id2, 10*time.Second)

	out := d.mustCtl("clear-session", dir)
	if out != "✓ Session state cleared\n" {
		t.Errorf("clear-session: got %q", out)
	}
	if fileExists(filepath.Join(dir, ".sessiond", "session_state.json")) {
		t.Errorf("session_state.json still there after clear-session")
	}
	if got := d.mustCtl("state", dir); got != "No session state in "+dir+": no session has ended there yet, and the next one starts from scratch.\n" {
		t.Errorf("state after clear-session: %q", got)
	}
	// --json says the same to a program.
	var cleared struct {
		Project string
		Cleared bool
	}
	if out := d.mustCtl("--json", "clear-session", dir); json.Unmarshal([]byte(out), &cleared) != nil || !cleared.Cleared || cleared.Project != dir {
		t.Errorf("clear-session --json: got %q", out)
	}
}

func TestContinuityCorruptFiles(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	for _, tc := range []struct {
		name, file, content string
	}{
		{"empty state", "session_state.json", ""},
		{"truncated state", "session_state.json", `{"last_session": {"summ`},
		{"non-JSON state", "session_state.json", "this is not JSON\n"},
		{"wrongly typed state", "session_state.json", `{"progress_pct": "x"}`},
		{"truncated handoff", "handoff.json", `{"session_id": "abc", "end_re`},
		// An unreadable lock is still one left behind: an unclean end.
		{"garbage lock", "session.lock", "garbage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := d.with(t)
			dir := project(t)
			path := filepath.Join(dir, ".sessiond", tc.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			r := d.ctl("start", dir, "--", "sleep", "1000")
			if r.code != 0 || !strings.HasPrefix(r.stdout, "🚀 Starting new session...\n") {
				t.Fatalf("start with a corrupt %s: want success and Starting new session\n%s", tc.file, r)
			}
			if !strings.Contains(r.stderr, "warning") || !strings.Contains(r.stderr, path) {
				t.Errorf("start with a corrupt %s: want a warning naming %s\n%s", tc.file, path, r)
			}
			kept, _ := filepath.Glob(path + ".corrupt-*")
			if len(kept) != 1 {
				t.Fatalf("corrupt %s kept aside as %q, want one %s.corrupt-*", tc.file, kept, tc.file)
			}
			if data, err := os.ReadFile(kept[0]); err != nil || string(data) != tc.content {
				t.Errorf("%s holds %q (%v), want the corrupt content %q", kept[0], data, err, tc.content)
			}
			id := strings.TrimSpace(strings.Split(strings.TrimSpace(r.stdout), "\n")[1])
			d.mustCtl("stop", id)
			if tc.file == "session.lock" {
				if !strings.Contains(r.stderr, "ended uncleanly") {
					t.Errorf("start with a garbage lock: want a warning of an unclean end\n%s", r)
				}
				return // released by the end
			}
			// The end writes a good file in its place.
			var v map[string]any
			if err := json.Unmarshal(readProjectFile(t, dir, tc.file), &v); err != nil {
				t.Errorf("%s after the session's end: %v", tc.file, err)
			}
		})
	}

	t.Run("malformed feature list", func(t *testing.T) {
		t.Parallel()
		d := d.with(t)
		dir := project(t)
		bad := "[\n  {\"id\": 1, \"description\": \"one\", \"passes\": false},\n  {\"id\": 2, \"description\": \"two\" \"passes\": false}\n]\n"
		list := filepath.Join(dir, "feature_list.json")
		writeFile(t, list, bad)
		r := d.ctl("start", dir, "--", "true")
		if r.code != 0 {
			t.Fatalf("start with a malformed feature list: want success\n%s", r)
		}
		if !strings.Contains(r.stderr, "warning") || !strings.Contains(r.stderr, "feature_list.json") ||
			!regexp.MustCompile(`feature_list\.json:3\b|line 3\b`).MatchString(r.stderr) {
			t.Errorf("start with a malformed feature list: want a warning naming feature_list.json and line 3\n%s", r)
		}
		if data, err := os.ReadFile(list); err != nil || string(data) != bad {
			t.Errorf("the malformed feature list was changed or moved: %q (%v)", data, err)
		}
		if kept, _ := filepath.Glob(list + ".corrupt-*"); len(kept) != 0 {
			t.Errorf("the feature list was moved aside: %q", kept)
		}
		id := strings.TrimSpace(strings.Split(strings.TrimSpace(r.stdout), "\n")[1])
		if rec := d.waitEnded(id, 10*time.Second); rec.EndReason != "complete" {
			t.Errorf("session with a malformed feature list ended %s, want complete", rec.EndReason)
		}
		if data, err := os.ReadFile(list); err != nil || string(data) != bad {
			t.Errorf("the session's end changed or moved the malformed feature list: %q (%v)", data, err)
		}
	})
}

func TestContinuityProjectFiles(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	repo := newCkptRepo(t)
	repo.write("main.go", "package main\n")
	repo.commitAll("initial")
	out := t.TempDir()
	// The session records its environment and the context it was handed
	// outside the project, then reports.
	run := script(t, repo.dir, "run.sh", `env > "$OUTDIR/env-$SESSIOND_SESSION_ID"
cp "$SESSIOND_CONTEXT_FILE" "$OUTDIR/context-$SESSIOND_SESSION_ID.md"
if [ -n "$SESSIOND_HANDOFF_FILE" ]; then cp "$SESSIOND_HANDOFF_FILE" "$OUTDIR/handoff-$SESSIOND_SESSION_ID.json"; fi
git status --porcelain -uall > "$OUTDIR/status-$SESSIOND_SESSION_ID"
sessionctl report --summary "Set up the repository layout" --next "Implement the HTTP handler"
`)
	repo.commitAll("add run.sh")
	env := []string{"--env", "PATH=" + binDir + ":/usr/bin:/bin", "--env", "OUTDIR=" + out}
	id1 := d.start(append(append([]string{repo.dir}, env...), "--env", "SECRET_TOKEN=hunter2-value", "--", run)...)
	d.waitEnded(id1, 10*time.Second)
	id2 := d.start(append(append([]string{repo.dir}, env...), "--", run)...)
	d.waitEnded(id2, 10*time.Second)

	pdir := filepath.Join(repo.dir, ".sessiond")
	env1, env2 := readEnv(t, filepath.Join(out, "env-"+id1)), readEnv(t, filepath.Join(out, "env-"+id2))
	if got := env1["SESSIOND_CONTEXT_FILE"]; got != filepath.Join(pdir, "context.md") {
		t.Errorf("SESSIOND_CONTEXT_FILE %q, want %s", got, filepath.Join(pdir, "context.md"))
	}
	if !fileExists(filepath.Join(out, "context-"+id1+".md")) {
		t.Errorf("context.md did not exist when the first session started")
	}
	if _, ok := env1["SESSIOND_HANDOFF_FILE"]; ok {
		t.Errorf("first session: SESSIOND_HANDOFF_FILE set")
	}
	if got := env2["SESSIOND_HANDOFF_FILE"]; got != filepath.Join(pdir, "handoff.json") {
		t.Errorf("second session: SESSIOND_HANDOFF_FILE %q, want %s", got, filepath.Join(pdir, "handoff.json"))
	}
	var prev handoff
	if data, err := os.ReadFile(filepath.Join(out, "handoff-"+id2+".json")); err != nil || json.Unmarshal(data, &prev) != nil || prev.SessionID != id1 {
		t.Errorf("the handoff the second session was handed: want the first session's (%s): %v %s", id1, err, data)
	}
	ctx2, err := os.ReadFile(filepath.Join(out, "context-"+id2+".md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Set up the repository layout", "Implement the HTTP handler", id1} {
		if !strings.Contains(string(ctx2), want) {
			t.Errorf("context.md of the second session does not mention %q:\n%s", want, ctx2)
		}
	}
	// The project's recent history, newest first, as git log gave it
	// when the session started.
	head, first := repo.git("log", "-1", "--format=%h add run.sh"), repo.git("log", "-1", "--format=%h initial", "HEAD~1")
	if _, commits, ok := strings.Cut(string(ctx2), "## Recent commits"); !ok || !strings.Contains(commits, head+"\n"+first+"\n") {
		t.Errorf("context.md of the second session does not list the commits %q then %q:\n%s", head, first, ctx2)
	}

	// Permissions.
	if got := perm(t, pdir); got != 0o700 {
		t.Errorf("%s: mode %v, want 0700", pdir, got)
	}
	entries, err := os.ReadDir(pdir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if got := perm(t, filepath.Join(pdir, e.Name())); got != 0o600 {
			t.Errorf("%s: mode %v, want 0600", e.Name(), got)
		}
	}
	// Excluded from git once, never in git status.
	exclude, err := os.ReadFile(filepath.Join(repo.dir, ".git", "info", "exclude"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(exclude), ".sessiond"); n != 1 {
		t.Errorf(".git/info/exclude mentions .sessiond %d times after two sessions, want once:\n%s", n, exclude)
	}
	for _, f := range []string{filepath.Join(out, "status-"+id1), filepath.Join(out, "status-"+id2)} {
		if data, _ := os.ReadFile(f); strings.Contains(string(data), ".sessiond") {
			t.Errorf("git status during a session shows .sessiond:\n%s", data)
		}
	}
	if got := repo.git("status", "--porcelain", "-uall"); strings.Contains(got, ".sessiond") {
		t.Errorf("git status shows .sessiond:\n%s", got)
	}

	// No env value in any file of the state dir, the project's .sessiond
	// or the daemon's log, but the sessions' own environ (0600, the
	// session's user's), kept for what starts them again.
	if env1["SECRET_TOKEN"] != "hunter2-value" {
		t.Fatalf("the session did not get SECRET_TOKEN: %q", env1["SECRET_TOKEN"])
	}
	for _, root := range []string{d.stateDir, pdir, d.logPath} {
		err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || e.Type()&fs.ModeSocket != 0 {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if bytes.Contains(data, []byte("hunter2-value")) {
				if fi, err := os.Stat(p); filepath.Base(p) == "environ" && filepath.Dir(filepath.Dir(p)) == filepath.Join(d.stateDir, "sessions") && err == nil && fi.Mode().Perm() == 0o600 {
					return nil
				}
				t.Errorf("%s holds the value of an --env variable", p)
			}
			return nil
		})
		if err != nil {
			t.Errorf("walk %s: %v", root, err)
		}
	}
}

func TestContinuityProjectAPI(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	id := d.start(dir, "--", "true")
	d.waitEnded(id, 10*time.Second)
	pid := ipcProjectID(dir)

	resp, body := curl(t, d.sock, "GET", "/v1/projects", nil)
	var projects []struct {
		ID  string `json:"id"`
		Dir string `json:"dir"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &projects) != nil {
		t.Fatalf("GET /v1/projects: %d %s", resp.StatusCode, body)
	}
	if !slices.ContainsFunc(projects, func(p struct {
		ID  string `json:"id"`
		Dir string `json:"dir"`
	}) bool {
		return p.ID == pid && p.Dir == dir
	}) {
		t.Errorf("GET /v1/projects: want {id %s, dir %s} in %s", pid, dir, body)
	}

	resp, body = curl(t, d.sock, "GET", "/v1/projects/"+pid+"/session", nil)
	var st sessionState
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &st) != nil || st.LastSession == nil || st.LastSession.SessionID != id {
		t.Errorf("GET /v1/projects/%s/session: %d %s; want the state of session %s", pid, resp.StatusCode, body, id)
	}

	resp, body = curl(t, d.sock, "DELETE", "/v1/projects/"+pid+"/session", nil)
	if resp.StatusCode != http.StatusNoContent || len(body) != 0 {
		t.Errorf("DELETE /v1/projects/%s/session: %d %q, want 204 and no body", pid, resp.StatusCode, body)
	}
	if fileExists(filepath.Join(dir, ".sessiond", "session_state.json")) {
		t.Errorf("session_state.json still there after DELETE")
	}
	resp, body = curl(t, d.sock, "GET", "/v1/projects/"+pid+"/session", nil)
	var e map[string]any
	if resp.StatusCode != http.StatusNotFound || json.Unmarshal(body, &e) != nil || e["error"] == "" || e["code"] != "not_found" {
		t.Errorf("GET after DELETE: %d %s, want 404 with error and code not_found", resp.StatusCode, body)
	}
	if msg, _ := e["error"].(string); msg == "" {
		t.Errorf("GET after DELETE: empty error message: %s", body)
	}
}

// ipcProjectID is a project's id: the first 12 hex digits of the sha256 of
// its path (DESIGN §2), computed here independently of the product.
func ipcProjectID(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return hex.EncodeToString(sum[:])[:12]
}

// syscallKill sends SIGKILL to pid, as a test killing a session's process
// behind the daemon's back.
func syscallKill(pid int) error {
	return syscall.Kill(pid, syscall.SIGKILL)
}
