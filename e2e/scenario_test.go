package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// scenarioAgent is a scripted agent whose step ($STEP) says what it does.
// It edits the feature list (F1..F4) as a real agent's tests would.
const scenarioAgent = `set -e
pass() { sed -i "/\"id\": \"$1\"/s/\"passes\": false/\"passes\": true/" feature_list.json; }
case "$STEP" in
one)
  echo "working on F1"
  pass F1; echo "login done" > login.txt
  sessionctl checkpoint "$SESSIOND_SESSION_ID" >/dev/null
  echo "working on F2"
  pass F2; echo "logout done" > logout.txt
  sessionctl report --summary "Completed F1 and F2 (login, logout)" --next "Build the password reset (F3)" --task "Login and logout" --status completed --progress 50
  ;;
two)
  echo "working on F3"
  sessionctl report --task "Password reset" --step 2/4 --status in_progress --blocker "Which mail provider sends the reset link?"
  echo "half of the reset" > reset.txt
  sleep 100
  ;;
three)
  true
  ;;
four)
  echo "working on F3 again"
  echo "reset, second try" > reset.txt
  sleep 0.3
  sessionctl report --task "Password reset" --step 3/4
  sleep 100
  ;;
five)
  sessionctl report --resolve 1 --summary "Mail goes through the project's SMTP relay; reset works"
  pass F2; pass F3; echo "reset done" > reset.txt
  sessionctl report --task "Password reset" --status completed --next "Ship the profile page (F4)"
  ;;
esac
`

const scenarioFeatures = `[
  {"id": "F1", "description": "Login", "priority": 1, "passes": false},
  {"id": "F2", "description": "Logout", "priority": 2, "passes": false},
  {"id": "F3", "description": "Password reset", "priority": 3, "passes": false},
  {"id": "F4", "description": "Profile page", "priority": 4, "passes": false}
]
`

// scenarioNormalizer replaces what changes from run to run — ids, hashes,
// times, durations, paths — with stable names, the session ids in the
// order they appear.
type scenarioNormalizer struct {
	dir, agent string
	ids        map[string]string
}

var (
	reHash     = regexp.MustCompile(`\b[0-9a-f]{40}\b`)
	reShort    = regexp.MustCompile(`\b[0-9a-f]{12}\b`)
	reGitShort = regexp.MustCompile(`(?m)^[0-9a-f]{7,12} `)
	reTime     = regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?`)
	reDur      = regexp.MustCompile(`\b(after|in) \d+(h\d+m)?(m)?\d*(\.\d+)?s\b|\d+h\d+m\d+s|\b\d+m\d+s\b`)
	reAgo      = regexp.MustCompile(`\b(just now|\d+ (minute|hour|day)s? ago)`)
	reMinutes  = regexp.MustCompile(`\(\d+(h|m|s)(\d+m)? from the start\)`)
)

func (n *scenarioNormalizer) id(id string) string {
	if s, ok := n.ids[id]; ok {
		return s
	}
	n.ids[id] = fmt.Sprintf("<S%d>", len(n.ids)+1)
	return n.ids[id]
}

func (n *scenarioNormalizer) norm(s string) string {
	s = strings.ReplaceAll(s, n.agent, "<AGENT>")
	s = strings.ReplaceAll(s, n.dir, "<PROJECT>")
	for id, name := range n.ids {
		s = strings.ReplaceAll(s, id, name)
	}
	s = reHash.ReplaceAllString(s, "<HASH>")
	s = reShort.ReplaceAllString(s, "<HASH12>")
	s = reGitShort.ReplaceAllString(s, "<COMMIT> ")
	s = reTime.ReplaceAllString(s, "<TIME>")
	s = reMinutes.ReplaceAllString(s, "(<DURATION> from the start)")
	s = reDur.ReplaceAllString(s, "<DURATION>")
	s = reAgo.ReplaceAllString(s, "<AGO>")
	return s
}

// scenarioViews is what the project says after a session, read as a user
// and the next session would.
type scenarioViews struct {
	summary, context, handoff, state, progress string
}

func readViews(t *testing.T, d *daemon, dir string) scenarioViews {
	t.Helper()
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(dir, ".sessiond", name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return string(data)
	}
	return scenarioViews{summary: d.mustCtl("state", dir), context: read("context.md"), handoff: read("handoff.json"),
		state: read("session_state.json"), progress: read("progress.md")}
}

// checkAgreement asserts that the views say the same next task, the same
// progress and the same open blockers.
func checkAgreement(t *testing.T, step string, v scenarioViews) {
	t.Helper()
	var st struct {
		NextActions    []string `json:"next_actions"`
		ProgressPct    float64  `json:"progress_pct"`
		TasksDone      int      `json:"tasks_done"`
		TasksTotal     int      `json:"tasks_total"`
		ActiveBlockers []struct {
			ID       int    `json:"id"`
			Question string `json:"question"`
		} `json:"active_blockers"`
	}
	var h struct {
		Next    []string `json:"recommended_next_steps"`
		Blocked string   `json:"blocked_reason"`
	}
	if err := json.Unmarshal([]byte(v.state), &st); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(v.handoff), &h); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.NextActions, h.Next) {
		t.Errorf("%s: next actions %q in the state, %q in the handoff", step, st.NextActions, h.Next)
	}
	if len(st.NextActions) > 0 {
		first := st.NextActions[0]
		if !strings.Contains(v.summary, "  1. "+first) {
			t.Errorf("%s: the restore summary does not say the next action %q:\n%s", step, first, v.summary)
		}
		last := v.progress[strings.LastIndex(v.progress, "## Session "):]
		if !strings.Contains(last, "1. "+first) {
			t.Errorf("%s: the progress entry does not say the next action %q:\n%s", step, first, last)
		}
	}
	progress := fmt.Sprintf("Progress: %d%%", int(st.ProgressPct))
	if st.TasksTotal > 0 {
		progress += fmt.Sprintf(" (%d/%d tasks complete)", st.TasksDone, st.TasksTotal)
	}
	if !strings.Contains(v.summary, progress) {
		t.Errorf("%s: the state says %q, the restore summary:\n%s", step, progress, v.summary)
	}
	var ids []string
	for _, b := range st.ActiveBlockers {
		ids = append(ids, fmt.Sprintf("%s (#%d)", b.Question, b.ID))
		if !strings.Contains(v.summary, fmt.Sprintf("#%d [high] %s", b.ID, b.Question)) {
			t.Errorf("%s: blocker #%d missing from the restore summary", step, b.ID)
		}
	}
	if got := strings.Join(ids, "; "); got != h.Blocked {
		t.Errorf("%s: open blockers %q in the state, %q in the handoff", step, got, h.Blocked)
	}
	// Each item of the last progress entry is under one heading only.
	last := v.progress[strings.LastIndex(v.progress, "## Session "):]
	seen := map[string]string{}
	heading := ""
	for _, line := range strings.Split(last, "\n") {
		if strings.HasPrefix(line, "### ") {
			heading = line
			continue
		}
		item, ok := strings.CutPrefix(strings.TrimPrefix(strings.TrimPrefix(line, "- [x] "), "- [ ] "), "")
		if !ok || !strings.HasPrefix(line, "- ") || heading == "### Notes" {
			continue
		}
		item = strings.TrimSuffix(item, ")")
		if i := strings.Index(item, " (step"); i >= 0 {
			item = item[:i]
		}
		if h, dup := seen[item]; dup && h != heading {
			t.Errorf("%s: %q is under both %s and %s", step, item, h, heading)
		}
		seen[item] = heading
	}
}

// TestContinuityScenario runs five sessions of a scripted agent on a git
// project with a feature list — one completes two features with reports,
// one times out mid-step with a blocker, one ends trivially, one runs after
// a restore to an earlier checkpoint and crashes with the daemon, one
// resolves the blocker — and compares every view after each with golden
// files (testdata/scenario/, -update rewrites them).
func TestContinuityScenario(t *testing.T) {
	sock := newSocketPath(t)
	stateDir := filepath.Join(t.TempDir(), "state")
	d := startDaemonAt(t, stateDir, sock)
	r := newCkptRepo(t)
	r.write("feature_list.json", scenarioFeatures)
	r.write("README.md", "# shop\n")
	r.commitAll("Start the shop")
	agent := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\n"+scenarioAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	n := &scenarioNormalizer{dir: r.dir, agent: agent, ids: map[string]string{}}
	path := "PATH=" + binDir + ":/usr/bin:/bin"
	start := func(step string, extra ...string) string {
		args := append([]string{"--checkpoint", "", "--env", path, "--env", "STEP=" + step}, extra...)
		id := d.start(append(args, r.dir, "--", agent)...)
		n.id(id)
		return id
	}
	compare := func(step string) {
		t.Helper()
		v := readViews(t, d, r.dir)
		checkAgreement(t, step, v)
		golden(t, filepath.Join("scenario", step+".golden"), n.norm(strings.Join([]string{
			"== sessionctl state", v.summary, "== context.md", v.context, "== handoff.json", v.handoff,
			"== session_state.json", v.state, "== progress.md", v.progress}, "\n")))
	}

	// 1. Completes F1 and F2, with reports; a checkpoint between them.
	s1 := start("one")
	if rec := d.waitEnded(s1, 20*time.Second); rec.EndReason != "complete" {
		t.Fatalf("session 1 ended %s", rec.EndReason)
	}
	compare("1-complete")
	cps := listCheckpoints(t, d, r.dir)
	if len(cps) == 0 {
		t.Fatal("session 1 left no checkpoint")
	}
	first := jsonString(cps[len(cps)-1]["id"]) // oldest: F1 passing, F2 not

	// 2. Times out in the middle of F3's second step, with a blocker.
	s2 := start("two", "--timeout", "4s", "--warn-before", "2s", "--stop-grace", "1s")
	if rec := d.waitEnded(s2, 30*time.Second); rec.EndReason != "timeout" {
		t.Fatalf("session 2 ended %s", rec.EndReason)
	}
	compare("2-timeout")

	// 3. Does nothing at all: the last summary stands.
	s3 := start("three")
	d.waitEnded(s3, 20*time.Second)
	compare("3-trivial")

	// 4. The tree goes back to session 1's first checkpoint (F1 passing
	// only); the next session says so, then crashes with the daemon.
	d.mustCtl("restore", r.dir, first)
	s4 := start("four")
	waitFor(t, 10*time.Second, "session 4's report", func() (bool, string) {
		rec := d.inspect(s4)
		return rec.State == "running" && strings.Contains(d.mustCtl("inspect", s4), `"step": "3/4"`), rec.State
	})
	pid := d.inspect(s4).PID
	d.kill9()
	_ = syscall.Kill(pid, syscall.SIGKILL)
	waitFor(t, 10*time.Second, "the agent to die", func() (bool, string) { return !alive(pid), "" })
	d = startDaemonAt(t, stateDir, sock)
	if rec := d.waitEnded(s4, 20*time.Second); rec.EndReason != "crashed" {
		t.Fatalf("session 4 ended %s", rec.EndReason)
	}
	compare("4-restored-crashed")

	// 5. Resolves the blocker and completes F3.
	s5 := start("five")
	if rec := d.waitEnded(s5, 20*time.Second); rec.EndReason != "complete" {
		t.Fatalf("session 5 ended %s", rec.EndReason)
	}
	compare("5-resolved")
}
