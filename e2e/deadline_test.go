package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Issue "session deadlines": the warning, the deadline, extend, idle,
// sessionctl remaining and the agent hook, the on_warning hook.

// Short deadlines for every test: warning at 1s, deadline at 3s.
var shortDeadline = []string{"--timeout", "3s", "--warn-before", "2s", "--stop-grace", "1s"}

// trapScript traps SIGUSR2 and writes the time it got it to usr2.marker.
const trapScript = `trap 'date +%s.%N >> usr2.marker' USR2
while :; do sleep 0.05; done
`

// markerTime reads the first time a trap wrote into a marker file.
func markerTime(t *testing.T, data []byte) time.Time {
	t.Helper()
	line, _, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
	f, err := strconv.ParseFloat(line, 64)
	if err != nil {
		t.Fatalf("marker %q: %v", data, err)
	}
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9))
}

func TestWarnSignal(t *testing.T) {
	t.Parallel()
	t.Run("trapping script gets it at the warning", func(t *testing.T) {
		t.Parallel()
		d := startDaemon(t)
		dir := project(t)
		run := script(t, dir, "run.sh", trapScript)
		id := d.start(append(append([]string{dir, "--warn-signal", "USR2"}, shortDeadline...), "--", run)...)
		marker := filepath.Join(dir, "usr2.marker")
		got := markerTime(t, waitLine(t, marker, 10*time.Second))
		var rec record
		waitFor(t, 5*time.Second, "the signalled leader in the record", func() (bool, string) {
			rec = d.inspect(id)
			return rec.Warning != nil && len(rec.Warning.Signaled) > 0, fmt.Sprintf("%+v", rec.Warning)
		})
		if late := got.Sub(rec.WarnAt); late < -50*time.Millisecond || late > time.Second {
			t.Errorf("SIGUSR2 arrived %s after warn_at %s, want within [0, 1s]", late, rec.WarnAt)
		}
		if rec.Warning == nil || rec.Warning.Signal != "SIGUSR2" || !slices.Contains(rec.Warning.Signaled, rec.PID) {
			t.Errorf("inspect warning: got %+v, want signal SIGUSR2 with the leader %d signaled", rec.Warning, rec.PID)
		}
		if rec.State != "warned" && rec.State != "stopping" {
			t.Errorf("state after the warning: %s, want warned", rec.State)
		}
		if !alive(rec.PID) {
			t.Errorf("the warning killed the trapping leader %d", rec.PID)
		}
		end := d.waitEnded(id, 10*time.Second)
		if end.EndReason != "timeout" {
			t.Errorf("end_reason: %s, want timeout", end.EndReason)
		}
	})
	t.Run("non-trapping script survives it and ends at the deadline", func(t *testing.T) {
		t.Parallel()
		d := startDaemon(t)
		dir := project(t)
		run := script(t, dir, "run.sh", "sleep 1000\n")
		id := d.start(append(append([]string{dir, "--warn-signal", "USR2"}, shortDeadline...), "--", run)...)
		rec := d.waitState(id, 10*time.Second, "warned")
		// The state turns warned before the signal goes out; the record
		// then says who got it and who was skipped.
		waitFor(t, 5*time.Second, "the warning's signal outcome in the record", func() (bool, string) {
			rec = d.inspect(id)
			return rec.Warning != nil && len(rec.Warning.Signaled)+len(rec.Warning.Skipped) > 0, fmt.Sprintf("%+v", rec.Warning)
		})
		if !alive(rec.PID) {
			t.Fatalf("the warning killed leader %d, which does not catch SIGUSR2", rec.PID)
		}
		w := rec.Warning
		if w == nil {
			t.Fatalf("inspect after the warning has no warning")
		}
		if slices.Contains(w.Signaled, rec.PID) {
			t.Errorf("warning.signaled %v holds the leader %d, which does not catch SIGUSR2", w.Signaled, rec.PID)
		}
		skipped := false
		for _, s := range w.Skipped {
			if s.PID == rec.PID && s.Reason != "" {
				skipped = true
			}
		}
		if !skipped {
			t.Errorf("warning.skipped %+v: want the leader %d with a reason", w.Skipped, rec.PID)
		}
		end := d.waitEnded(id, 10*time.Second)
		if end.EndReason != "timeout" || end.EndedAt == nil || end.EndedAt.Before(end.Deadline) {
			t.Errorf("end: reason %s at %v, want timeout at or after the deadline %s", end.EndReason, end.EndedAt, end.Deadline)
		}
	})
	t.Run("default sends no signal but warns", func(t *testing.T) {
		t.Parallel()
		d := startDaemon(t)
		dir := project(t)
		run := script(t, dir, "run.sh", trapScript)
		id := d.start(append([]string{dir}, append(shortDeadline, "--", run)...)...)
		rec := d.waitState(id, 10*time.Second, "warned")
		if w := rec.Warning; w == nil || w.Signal != "" || len(w.Signaled) != 0 {
			t.Errorf("default warning: got %+v, want no signal", w)
		}
		data := waitFile(t, filepath.Join(dir, ".sessiond", "warning.json"), 5*time.Second)
		var wf struct {
			SessionID string    `json:"session_id"`
			Deadline  time.Time `json:"deadline"`
			Message   string    `json:"message"`
		}
		if err := json.Unmarshal(data, &wf); err != nil {
			t.Fatalf("warning.json: %v\n%s", err, data)
		}
		if wf.SessionID != id || !wf.Deadline.Equal(rec.Deadline) || !strings.Contains(wf.Message, "sessionctl report") {
			t.Errorf("warning.json: got %+v, want session %s, deadline %s and a message saying what to do", wf, id, rec.Deadline)
		}
		end := d.waitEnded(id, 10*time.Second)
		if end.EndReason != "timeout" {
			t.Errorf("end_reason: %s, want timeout", end.EndReason)
		}
		if fileExists(filepath.Join(dir, "usr2.marker")) {
			t.Errorf("a signal reached the session although no --warn-signal was given")
		}
	})
}

// TestWarnSignalComesAfterWarningFile checks that an agent that handles the
// warning signal finds the warning already recorded: .sessiond/warning.json
// written and sessionctl remaining saying warned (DESIGN §6 "Warning" lists
// the file first, the signal last).
func TestWarnSignalComesAfterWarningFile(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	// A builtin-only busy loop, so the trap runs the moment the signal comes.
	run := script(t, dir, "run.sh", `trap 'if [ -e .sessiond/warning.json ]; then echo yes > seen; else echo no > seen; fi
sessionctl --socket "$SESSIOND_SOCKET" remaining --json > remaining.json' USR2
while :; do :; done
`)
	id := d.start(append(append([]string{dir, "--warn-signal", "USR2", "--env", "PATH=" + binDir + ":/usr/bin:/bin"}, shortDeadline...), "--", run)...)
	seen := strings.TrimSpace(string(waitLine(t, filepath.Join(dir, "seen"), 10*time.Second)))
	waitFor(t, 10*time.Second, "remaining.json", func() (bool, string) {
		data, err := os.ReadFile(filepath.Join(dir, "remaining.json"))
		return err == nil && json.Valid(data), string(data)
	})
	var rem struct {
		Warned bool `json:"warned"`
	}
	data, _ := os.ReadFile(filepath.Join(dir, "remaining.json"))
	_ = json.Unmarshal(data, &rem)
	d.mustCtl("stop", id)
	if seen != "yes" {
		t.Errorf("the SIGUSR2 handler ran before .sessiond/warning.json was written")
	}
	if !rem.Warned {
		t.Errorf("sessionctl remaining from the SIGUSR2 handler: warned false, want true\n%s", data)
	}
}

func TestDeadlineKillsTermIgnoringSession(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	run := script(t, dir, "run.sh", `trap "" TERM
echo $$ > leader.pid
sleep 1000
`)
	id := d.start(dir, "--timeout", "2s", "--warn-before", "1s", "--stop-grace", "1s", "--", run)
	leader := readPID(t, filepath.Join(dir, "leader.pid"))
	killOnCleanup(t, leader)
	rec := d.waitEnded(id, 15*time.Second)
	if rec.EndReason != "timeout" || rec.Signal != "SIGKILL" {
		t.Errorf("end: reason %q, signal %q; want timeout, SIGKILL", rec.EndReason, rec.Signal)
	}
	if rec.EndedAt == nil {
		t.Fatalf("ended session has no ended_at")
	}
	if after := rec.EndedAt.Sub(rec.Deadline); after < 900*time.Millisecond || after > 4*time.Second {
		t.Errorf("ended %s after the deadline, want about the 1s grace", after)
	}
	if alive(leader) {
		t.Errorf("leader %d alive after the session ended", leader)
	}
}

func TestExtend(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	id := d.start(dir, "--timeout", "3s", "--warn-before", "2s", "--stop-grace", "1s", "--", "sleep", "1000")
	first := d.waitState(id, 10*time.Second, "warned")
	firstWarning := first.Warning.At

	out := d.mustCtl("--json", "extend", id, "5s")
	var ext record
	if err := json.Unmarshal([]byte(out), &ext); err != nil {
		t.Fatalf("extend --json: %v\n%s", err, out)
	}
	if got := ext.Deadline.Sub(first.Deadline); got != 5*time.Second {
		t.Errorf("extend 5s moved the deadline by %s", got)
	}
	if got := ext.Deadline.Sub(ext.WarnAt); got != 2*time.Second {
		t.Errorf("after extend, deadline - warn_at = %s, want the 2s warn-before", got)
	}
	if ext.State != "running" {
		t.Errorf("a warned session extended past its warning: state %s, want running", ext.State)
	}
	if got := d.inspect(id); !got.Deadline.Equal(ext.Deadline) {
		t.Errorf("inspect deadline %s, want the extended %s", got.Deadline, ext.Deadline)
	}
	if fileExists(filepath.Join(dir, ".sessiond", "warning.json")) {
		t.Errorf("warning.json still there after the deadline moved past the warning")
	}

	// Past the old deadline, the session runs on.
	sleepUntil(first.Deadline.Add(500 * time.Millisecond))
	rec := d.inspect(id)
	if rec.State != "running" || !alive(rec.PID) {
		t.Fatalf("0.5s past the old deadline: state %s (%s), pid alive %v; want running", rec.State, rec.EndReason, alive(rec.PID))
	}
	// And it is warned again at the new warning time.
	again := d.waitState(id, 10*time.Second, "warned")
	if again.Warning == nil || !again.Warning.At.After(firstWarning) || again.Warning.At.Before(ext.WarnAt.Add(-50*time.Millisecond)) {
		t.Errorf("second warning at %v, want at the new warn_at %s", again.Warning, ext.WarnAt)
	}
	// Extensions add up, to no further than 100 years ahead: a deadline
	// past the year 9999 would have no form in the record or the listing.
	far := d.inspect(id).Deadline.Add(800000 * time.Hour)
	d.mustCtl("extend", id, "800000h")
	for i := 0; i < 2; i++ {
		r := d.ctl("extend", id, "800000h")
		if r.code != 2 || !strings.Contains(r.stderr, "more than 100 years from now") {
			t.Errorf("an extension to 182 years ahead: want exit 2 (usage) saying it is too far\n%s", r)
		}
	}
	if got := d.inspect(id).Deadline; !got.Equal(far) {
		t.Errorf("deadline after a refused extension: %s, want %s", got, far)
	}
	if r := d.ctl("ps"); r.code != 0 || !strings.Contains(r.stdout, id) {
		t.Errorf("ps after the refused extensions:\n%s", r)
	}
	d.mustCtl("stop", id)

	r := d.ctl("extend", id, "5s")
	if r.code != 1 || !strings.Contains(r.stderr, "ended") {
		t.Errorf("extend of an ended session: want exit 1 saying it has ended\n%s", r)
	}
	for _, by := range [][]string{{"0s"}, {"--", "-5s"}, {"-5s"}, {"soon"}, {""}} {
		r := d.ctl(append([]string{"extend", id}, by...)...)
		if r.code != 2 || r.stderr == "" {
			t.Errorf("extend by %q: want exit 2 and a message\n%s", by, r)
		}
	}
}

func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	silentDir, chattyDir := project(t), project(t)
	chatty := script(t, chattyDir, "run.sh", "while :; do echo tick; sleep 0.2; done\n")
	start := time.Now()
	silent := d.start(silentDir, "--timeout", "20s", "--warn-before", "5s", "--idle-timeout", "1s", "--stop-grace", "1s", "--", "sleep", "1000")
	talker := d.start(chattyDir, "--timeout", "20s", "--warn-before", "5s", "--idle-timeout", "1s", "--stop-grace", "1s", "--", chatty)

	rec := d.waitEnded(silent, 10*time.Second)
	if rec.EndReason != "idle" {
		t.Errorf("silent session: end_reason %s, want idle", rec.EndReason)
	}
	if rec.EndedAt == nil || rec.EndedAt.Sub(rec.StartedAt) < time.Second {
		t.Errorf("silent session ended at %v, before its 1s idle timeout from %s", rec.EndedAt, rec.StartedAt)
	}
	sleepUntil(start.Add(2 * time.Second))
	if got := d.inspect(talker); got.State != "running" {
		t.Errorf("session printing every 200ms, after 2s with --idle-timeout 1s: state %s (%s), want running", got.State, got.EndReason)
	}
	d.mustCtl("stop", talker)
}

// normalize replaces what varies between runs with placeholders.
func normalize(s, id string) string {
	s = strings.ReplaceAll(s, id, "<SESSION_ID>")
	s = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`).ReplaceAllString(s, "<TIME>")
	s = regexp.MustCompile(`"seconds_left": \d+`).ReplaceAllString(s, `"seconds_left": <N>`)
	s = regexp.MustCompile(`"left": "[0-9a-z.]+"`).ReplaceAllString(s, `"left": "<DURATION>"`)
	s = regexp.MustCompile(`stopped in [0-9a-z.]+ `).ReplaceAllString(s, "stopped in <DURATION> ")
	return s
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

func TestRemainingAndAgentHook(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	// sessionctl runs from inside the session, finding the daemon through
	// SESSIOND_SOCKET and the session through SESSIOND_SESSION_ID.
	run := script(t, dir, "run.sh", `sessionctl --socket "$SESSIOND_SOCKET" remaining --json > remaining-before.json
sessionctl --socket "$SESSIOND_SOCKET" hook claude-code > hook-before.json
echo $? > hook-before.code
while [ ! -e .sessiond/warning.json ]; do sleep 0.02; done
sessionctl --socket "$SESSIOND_SOCKET" remaining --json > remaining-warned.json
sessionctl --socket "$SESSIOND_SOCKET" hook claude-code > hook-warned.json
echo '{"session_id":"abc","hook_event_name":"UserPromptSubmit","prompt":"go on"}' |
	sessionctl --socket "$SESSIOND_SOCKET" hook claude-code > hook-prompt.json
touch done
sleep 1000
`)
	id := d.start(append(append([]string{dir, "--env", "PATH=" + binDir + ":/usr/bin:/bin"}, shortDeadline...), "--", run)...)
	waitFile(t, filepath.Join(dir, "done"), 10*time.Second)
	rec := d.inspect(id)
	d.mustCtl("stop", id)
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}

	type remaining struct {
		SessionID string    `json:"session_id"`
		Deadline  time.Time `json:"deadline"`
		Seconds   *int64    `json:"seconds_left"`
		Warned    *bool     `json:"warned"`
		State     string    `json:"state"`
	}
	for _, tc := range []struct {
		file   string
		warned bool
		state  string
		max    int64
	}{
		{"remaining-before.json", false, "running", 3},
		{"remaining-warned.json", true, "warned", 2},
	} {
		raw := read(tc.file)
		var r remaining
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			t.Errorf("%s: %v\n%s", tc.file, err, raw)
			continue
		}
		if r.SessionID != id || r.Warned == nil || *r.Warned != tc.warned || r.State != tc.state ||
			r.Seconds == nil || *r.Seconds < 0 || *r.Seconds > tc.max || !r.Deadline.Equal(rec.Deadline) {
			t.Errorf("%s: got %s, want session %s, warned %v, state %s, 0 <= seconds_left <= %d", tc.file, raw, id, tc.warned, tc.state, tc.max)
		}
		golden(t, tc.file+".golden", normalize(raw, id))
	}

	if got := read("hook-before.json"); got != "" || strings.TrimSpace(read("hook-before.code")) != "0" {
		t.Errorf("hook claude-code before the warning: printed %q, exit %s; want nothing, exit 0", got, read("hook-before.code"))
	}
	raw := read("hook-warned.json")
	var hook struct {
		Out struct {
			Event   string `json:"hookEventName"`
			Context string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(raw), &hook); err != nil || hook.Out.Event != "PostToolUse" || !strings.Contains(hook.Out.Context, "sessiond") {
		t.Errorf("hook claude-code after the warning: got %s (%v)", raw, err)
	}
	golden(t, "hook-warned.json.golden", normalize(raw, id))

	// Claude Code gives the hook its event on stdin.
	raw = read("hook-prompt.json")
	if err := json.Unmarshal([]byte(raw), &hook); err != nil || hook.Out.Event != "UserPromptSubmit" {
		t.Errorf("hook claude-code with a UserPromptSubmit input: got %s (%v)", raw, err)
	}
	golden(t, "hook-prompt.json.golden", normalize(raw, id))
}

func TestBadDeadlineFlags(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	for _, tc := range []struct {
		name    string
		flags   []string
		mention string
	}{
		{"zero timeout", []string{"--timeout", "0s"}, "timeout"},
		{"negative timeout", []string{"--timeout", "-1s"}, "timeout"},
		{"garbage timeout", []string{"--timeout", "soon"}, "timeout"},
		{"warn-before equal to timeout", []string{"--timeout", "3s", "--warn-before", "3s"}, "warn"},
		{"warn-before over timeout", []string{"--timeout", "3s", "--warn-before", "5s"}, "warn"},
		{"negative warn-before", []string{"--timeout", "3s", "--warn-before=-1s"}, "warn"},
		{"unknown warn signal", []string{"--warn-signal", "FOO"}, "FOO"},
		{"uncatchable warn signal", []string{"--warn-signal", "SIGKILL"}, "cannot be caught"},
		{"freezing warn signal", []string{"--warn-signal", "STOP"}, "cannot be caught"},
		{"negative stop-grace", []string{"--stop-grace=-1s"}, "grace"},
		{"zero idle-timeout", []string{"--idle-timeout", "0s"}, "idle"},
		{"negative timeout says positive", []string{"--timeout", "-1s"}, "want a positive duration"},
		{"negative checkpoint interval", []string{"--checkpoint", "@every -5m"}, "1s or more"},
		{"zero checkpoint interval", []string{"--checkpoint", "@every 0s"}, "1s or more"},
		{"garbage checkpoint", []string{"--checkpoint", "bogus"}, "schedule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"start", dir}, tc.flags...), "--", "sleep", "1000")
			r := d.with(t).ctl(args...)
			if r.code == 0 || !strings.Contains(strings.ToLower(r.stderr), strings.ToLower(tc.mention)) {
				t.Errorf("want a non-zero exit and a message mentioning %q\n%s", tc.mention, r)
			}
		})
	}
	if got := d.list(true); len(got) != 0 {
		t.Errorf("ps -a after refused starts: got %d sessions, want none", len(got))
	}
	if fileExists(filepath.Join(dir, ".sessiond", "session.lock")) {
		t.Errorf("a refused start left the project locked")
	}
}

func TestOnWarningHook(t *testing.T) {
	t.Parallel()
	t.Run("touch", func(t *testing.T) {
		t.Parallel()
		d := startDaemon(t)
		dir := project(t)
		id := d.start(append(append([]string{dir, "--on-warning", "touch hook.marker"}, shortDeadline...), "--", "sleep", "1000")...)
		marker := filepath.Join(dir, "hook.marker")
		waitFile(t, marker, 10*time.Second)
		fi, err := os.Stat(marker)
		if err != nil {
			t.Fatal(err)
		}
		rec := d.inspect(id)
		if late := fi.ModTime().Sub(rec.WarnAt); late < -50*time.Millisecond || late > time.Second {
			t.Errorf("hook ran %s after warn_at, want within [0, 1s]", late)
		}
		if rec.Warning == nil || rec.Warning.Hook != "touch hook.marker" {
			t.Errorf("inspect warning: %+v, want the hook recorded", rec.Warning)
		}
		d.mustCtl("stop", id)
	})
	t.Run("hanging hook does not delay the stop", func(t *testing.T) {
		t.Parallel()
		d := startDaemon(t)
		dir := project(t)
		id := d.start(dir, "--timeout", "2s", "--warn-before", "1s", "--stop-grace", "1s",
			"--on-warning", "echo $$ > hook.pid; exec sleep 1000", "--", "sleep", "1000")
		killOnCleanup(t, readPID(t, filepath.Join(dir, "hook.pid")))
		rec := d.waitEnded(id, 10*time.Second)
		if rec.EndReason != "timeout" || rec.EndedAt == nil {
			t.Fatalf("end: %s at %v, want timeout", rec.EndReason, rec.EndedAt)
		}
		// The leader dies of SIGTERM at once; the hook must not hold the end.
		if after := rec.EndedAt.Sub(rec.Deadline); after > 900*time.Millisecond {
			t.Errorf("ended %s after the deadline; a hanging hook delayed the stop", after)
		}
	})
	t.Run("hanging hook ends with its session", func(t *testing.T) {
		t.Parallel()
		// DESIGN §6 "Stop": nothing the session started outlives it. The
		// hook runs for the session, with its environment.
		d := startDaemon(t)
		dir := project(t)
		id := d.start(dir, "--timeout", "2s", "--warn-before", "1s", "--stop-grace", "1s",
			"--on-warning", "echo $$ > hook.pid; exec sleep 1000", "--", "sleep", "1000")
		hook := readPID(t, filepath.Join(dir, "hook.pid"))
		killOnCleanup(t, hook)
		d.waitEnded(id, 10*time.Second)
		if alive(hook) {
			t.Errorf("the hanging on_warning hook (pid %d) outlived its session", hook)
		}
	})
}

// TestRemainingOnEndedSession: remaining on an ended session says that it
// ended, how and when, and fails, so that a script does not read "0s left"
// as time to go on.
func TestRemainingOnEndedSession(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	id := d.start("--checkpoint", "", dir, "--", "sh", "-c", "exit 3")
	d.waitEnded(id, 15*time.Second)
	r := d.ctl("remaining", id)
	if r.code != 1 {
		t.Errorf("remaining on an ended session: exit %d, want 1\n%s", r.code, r)
	}
	if !strings.Contains(r.stderr, "session "+id+" has ended (error, exit 3) at ") || !strings.Contains(r.stderr, "no time left") {
		t.Errorf("remaining on an ended session: stderr %q", r.stderr)
	}
	if strings.Contains(r.stdout, "left") {
		t.Errorf("remaining on an ended session printed time left: %q", r.stdout)
	}
}
