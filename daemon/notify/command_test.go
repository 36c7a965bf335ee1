package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/proc"
)

// recorder is a script that writes what it was given into a directory: its
// environment, stdin, working directory, ids and process group.
const recorder = `out="$RECORD_DIR"
env > "$out/env.tmp"
cat > "$out/stdin"
pwd > "$out/pwd"
id -u > "$out/uid"; id -g > "$out/gid"; id -G > "$out/groups"
cut -d' ' -f5 /proc/$$/stat > "$out/pgid"
echo $$ > "$out/pid"
mv "$out/env.tmp" "$out/env"
`

// readRecord waits for the recorder's output and returns its files.
func readRecord(t *testing.T, dir string) map[string]string {
	t.Helper()
	waitFor(t, 10*time.Second, "the command's record", func() bool {
		_, err := os.Stat(filepath.Join(dir, "env"))
		return err == nil
	})
	rec := map[string]string{}
	for _, f := range []string{"env", "stdin", "pwd", "uid", "gid", "groups", "pgid", "pid"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		rec[f] = strings.TrimSpace(string(b))
	}
	return rec
}

func envMap(env string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(env, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m
}

func TestCommandEnvAndStdin(t *testing.T) {
	project, record := t.TempDir(), t.TempDir()
	writeScript(t, project, "record.sh", recorder)
	rule := config.NotifyRule{Name: "rec", On: []string{"ended:error"}, Command: []string{"./record.sh", "arg"}}
	n, _ := newNotifier(t, nil, Options{})
	code := 3
	ev := Event{
		Type: config.NotifyEnded, SessionID: "s1", Name: "refactor", ProjectDir: project, ProjectID: "abc123",
		EndReason: "error", ExitCode: &code, Message: "ended: error (exit 3)", Owner: selfOwner(t),
		// The session's environment, with a stale handoff of its previous
		// session and the service manager's socket.
		Env: []string{"PATH=" + os.Getenv("PATH"), "RECORD_DIR=" + record, "FROM_SESSION=yes",
			"SESSIOND_HANDOFF_FILE=/old/handoff.json", "NOTIFY_SOCKET=/run/systemd/notify"},
	}
	n.Publish(ev, []config.NotifyRule{rule})
	rec := readRecord(t, record)
	env := envMap(rec["env"])
	want := map[string]string{
		"SESSIOND_EVENT": "ended", "SESSIOND_SESSION_ID": "s1", "SESSIOND_SESSION_NAME": "refactor",
		"SESSIOND_PROJECT_DIR": project, "SESSIOND_PROJECT_ID": "abc123", "SESSIOND_END_REASON": "error",
		"SESSIOND_EXIT_CODE": "3", "SESSIOND_HANDOFF_FILE": "", "SESSIOND_MESSAGE": "ended: error (exit 3)",
		"SESSIOND_RULE": "rec", "SESSIOND_SIGNAL": "", "FROM_SESSION": "yes",
		"SESSIOND_TITLE": "Session refactor ended: error (exit 3)",
	}
	for k, v := range want {
		if got, ok := env[k]; !ok || got != v {
			t.Errorf("%s = %q (set: %v), want %q", k, got, ok, v)
		}
	}
	if _, ok := env["NOTIFY_SOCKET"]; ok {
		t.Error("NOTIFY_SOCKET was passed on; a command could pose as the daemon to systemd")
	}
	var p Payload
	if err := json.Unmarshal([]byte(rec["stdin"]), &p); err != nil {
		t.Fatalf("stdin is not the JSON payload: %v: %q", err, rec["stdin"])
	}
	if p.Version != PayloadVersion || p.Event != "ended" || p.SessionID != "s1" || p.ExitCode == nil || *p.ExitCode != 3 || p.ProjectDir != project {
		t.Errorf("stdin payload = %+v", p)
	}
	if env["SESSIOND_NOTIFY_ID"] != p.ID {
		t.Errorf("SESSIOND_NOTIFY_ID = %q, payload id %q", env["SESSIOND_NOTIFY_ID"], p.ID)
	}
	if rec["pwd"] != project {
		t.Errorf("ran in %s, want the project %s", rec["pwd"], project)
	}
	if rec["pgid"] != rec["pid"] {
		t.Errorf("process group %s, pid %s: want a group of its own", rec["pgid"], rec["pid"])
	}
	waitFor(t, 5*time.Second, "the delivery to count", func() bool { return n.Stats().Sent == 1 })
}

// TestCommandAsUser: under a root daemon the command runs with the session
// owner's uid, gid, groups and HOME.
func TestCommandAsUser(t *testing.T) {
	owner := throwawayUser(t)
	project := filepath.Join(owner.Home, "project")
	record := filepath.Join(owner.Home, "record")
	for _, d := range []string{project, record} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, owner.UID, owner.GID); err != nil {
			t.Fatal(err)
		}
	}
	writeScript(t, project, "record.sh", recorder)
	rule := config.NotifyRule{On: []string{"warned"}, Command: []string{"./record.sh"}}
	n, _ := newNotifier(t, []config.NotifyRule{rule}, Options{})
	t.Setenv("RECORD_DIR", record)
	n.Publish(Event{Type: config.NotifyWarned, SessionID: "u1", ProjectDir: project, Owner: owner}, nil)
	rec := readRecord(t, record)
	if rec["uid"] != strconv.Itoa(owner.UID) || rec["gid"] != strconv.Itoa(owner.GID) {
		t.Errorf("ran as uid %s gid %s, want %d %d", rec["uid"], rec["gid"], owner.UID, owner.GID)
	}
	for _, g := range strings.Fields(rec["groups"]) {
		if g == "0" {
			t.Errorf("groups %q include root's", rec["groups"])
		}
	}
	env := envMap(rec["env"])
	if env["HOME"] != owner.Home || env["USER"] != owner.Name {
		t.Errorf("HOME=%q USER=%q, want %q %q", env["HOME"], env["USER"], owner.Home, owner.Name)
	}
	if rec["pwd"] != project {
		t.Errorf("ran in %s, want %s", rec["pwd"], project)
	}
}

// gone reports whether a process has ended (exited, or a zombie).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	waitFor(t, 10*time.Second, path, func() bool {
		b, err := os.ReadFile(path)
		return err == nil && strings.HasSuffix(string(b), "\n")
	})
	b, _ := os.ReadFile(path)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestCommandTimeoutKillsGroup: at its timeout the command's whole process
// group is killed, its background children included.
func TestCommandTimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "hang.sh", `sleep 60 &
echo $! > child.pid
echo $$ > leader.pid
wait
`)
	rule := config.NotifyRule{On: []string{"ended"}, Command: []string{"./hang.sh"}, Timeout: config.Duration{Duration: 300 * time.Millisecond}}
	n, _ := newNotifier(t, nil, Options{})
	ev := SampleEvent()
	ev.ProjectDir, ev.Owner = dir, selfOwner(t)
	start := time.Now()
	err := n.Test(context.Background(), rule, FromProject, ev)
	if err == nil || !strings.Contains(err.Error(), "timed out after 300ms") || !strings.Contains(err.Error(), "process group was killed") {
		t.Fatalf("Test = %v, want a timeout", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Test took %s for a 300ms timeout", took)
	}
	leader, child := readPid(t, filepath.Join(dir, "leader.pid")), readPid(t, filepath.Join(dir, "child.pid"))
	waitFor(t, 5*time.Second, "the group to be gone", func() bool { return gone(leader) && gone(child) })
}

// TestCommandLeftoversKilled: what a command leaves running in its group
// when it exits is killed with it.
func TestCommandLeftoversKilled(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "fork.sh", "sleep 60 >/dev/null 2>&1 &\necho $! > child.pid\n")
	rule := config.NotifyRule{On: []string{"ended"}, Command: []string{"./fork.sh"}}
	n, _ := newNotifier(t, nil, Options{})
	ev := SampleEvent()
	ev.ProjectDir, ev.Owner = dir, selfOwner(t)
	if err := n.Test(context.Background(), rule, FromProject, ev); err != nil {
		t.Fatalf("Test: %v", err)
	}
	child := readPid(t, filepath.Join(dir, "child.pid"))
	waitFor(t, 5*time.Second, "the background child to be killed", func() bool { return gone(child) })
}

func TestCommandFailure(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "fail.sh", "echo working\necho 'no such channel' >&2\nexit 3\n")
	n, _ := newNotifier(t, nil, Options{})
	ev := SampleEvent()
	ev.ProjectDir, ev.Owner = dir, selfOwner(t)
	err := n.Test(context.Background(), config.NotifyRule{Name: "f", On: []string{"ended"}, Command: []string{"./fail.sh"}}, FromProject, ev)
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "no such channel") {
		t.Fatalf("Test = %v, want exit status 3 with the output", err)
	}
	err = n.Test(context.Background(), config.NotifyRule{On: []string{"ended"}, Command: []string{"no-such-notifier-cmd"}}, FromProject, ev)
	if !errors.Is(err, proc.ErrNotFound) || !strings.Contains(err.Error(), "no-such-notifier-cmd") {
		t.Fatalf("Test = %v, want not found naming the command", err)
	}
}

// TestCommandExitStatusUnderReaper: with the daemon's reaper running (see
// TestMain), many commands at once still get their own exit status.
func TestCommandExitStatusUnderReaper(t *testing.T) {
	n, _ := newNotifier(t, nil, Options{})
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Go(func() {
			rule := config.NotifyRule{On: []string{"ended"}, Command: []string{"sh", "-c", fmt.Sprintf("exit %d", i%5)}}
			errs[i] = n.Test(context.Background(), rule, FromDaemon, Event{})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if i%5 == 0 {
			if err != nil {
				t.Errorf("command %d (exit 0): %v", i, err)
			}
			continue
		}
		if want := fmt.Sprintf("exit status %d", i%5); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("command %d: %v, want %s", i, err, want)
		}
	}
}

func TestCommandOutputToLog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "output.log")
	if err := os.WriteFile(log, []byte("agent output\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, _ := newNotifier(t, nil, Options{})
	ev := SampleEvent()
	ev.LogPath = log
	rule := config.NotifyRule{On: []string{"warned"}, Command: []string{"sh", "-c", `echo "hook saw $SESSIOND_EVENT"`}}
	if err := n.Test(context.Background(), rule, FromDaemon, ev); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(log)
	if got, want := string(b), "agent output\nhook saw test\n"; got != want {
		t.Errorf("log = %q, want %q", got, want)
	}
}

// TestCommandOutputToLogIsBounded: a command that prints without end adds
// at most maxCommandOutput to the session's log, then a line that says the
// rest was dropped; it is not cut off for it, and exits as it would.
func TestCommandOutputToLogIsBounded(t *testing.T) {
	log := filepath.Join(t.TempDir(), "output.log")
	if err := os.WriteFile(log, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	n, _ := newNotifier(t, nil, Options{})
	ev := SampleEvent()
	ev.LogPath = log
	rule := config.NotifyRule{On: []string{"ended"}, Command: []string{"sh", "-c", `head -c 5000000 /dev/zero | tr '\0' y; echo; echo done`}}
	if err := n.Test(context.Background(), rule, FromDaemon, ev); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(log)
	const note = "\n[sessiond: the notification command's output past 1 MiB is dropped]\n"
	if len(b) != maxCommandOutput+len(note) || !strings.HasSuffix(string(b), note) || strings.Count(string(b), "y") != maxCommandOutput {
		t.Errorf("the log holds %d bytes ending %q, want %d bytes of output and the note", len(b), b[max(0, len(b)-80):], maxCommandOutput)
	}
}

// TestCommandKilledSaysBySignal: a command killed by a signal says which,
// by its name.
func TestCommandKilledSaysBySignal(t *testing.T) {
	n, _ := newNotifier(t, nil, Options{})
	err := n.Test(context.Background(), config.NotifyRule{On: []string{"ended"}, Command: []string{"sh", "-c", "kill -9 $$"}}, FromDaemon, Event{})
	if err == nil || !strings.Contains(err.Error(), "killed by SIGKILL") {
		t.Errorf("Test = %v, want killed by SIGKILL", err)
	}
}

// TestProjectRuleNeedsOwner: a root daemon never runs a project's command
// as root because an event came without its owner.
func TestProjectRuleNeedsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the refusal applies to a root daemon only")
	}
	dir := t.TempDir()
	n, _ := newNotifier(t, nil, Options{})
	ev := SampleEvent()
	ev.ProjectDir = dir
	rule := config.NotifyRule{On: []string{"ended"}, Command: []string{"sh", "-c", "touch ran"}}
	if err := n.Test(context.Background(), rule, FromProject, ev); !errors.Is(err, errNoOwner) {
		t.Fatalf("Test = %v, want errNoOwner", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("the command ran")
	}
	ev.Owner = &Owner{UID: 0, GID: 0, Home: "/root"}
	if err := n.Test(context.Background(), rule, FromProject, ev); err != nil {
		t.Fatalf("Test of root's own session: %v", err)
	}
	if err := n.Test(context.Background(), rule, FromDaemon, SampleEvent()); err != nil {
		t.Fatalf("Test of a daemon rule: %v", err)
	}
}
