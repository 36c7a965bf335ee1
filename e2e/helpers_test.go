package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessiond/sessiond/daemon/cgroup"
)

// pollInterval is how often the bounded waits look again.
const pollInterval = 20 * time.Millisecond

// waitFor polls cond until it holds or timeout passes; then the test fails,
// naming what it waited for and, if cond set it, the last thing it saw.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (ok bool, seen string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var seen string
	for {
		var ok bool
		if ok, seen = cond(); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last seen: %s", timeout, what, seen)
		}
		time.Sleep(pollInterval)
	}
}

// sleepUntil lets time pass up to at. It is used only where a test asserts
// that something has NOT happened by a given time, never to wait for
// something to happen.
func sleepUntil(at time.Time) {
	if d := time.Until(at); d > 0 {
		time.Sleep(d)
	}
}

// daemon is a sessiond run by a test.
type daemon struct {
	t        testing.TB
	sock     string
	stateDir string
	logPath  string
	cmd      *exec.Cmd
	exited   chan struct{}
	exitErr  error
	stopped  bool
}

// newSocketPath returns a short socket path in a fresh directory (Unix
// socket paths are limited to 107 bytes, and t.TempDir() can be long).
func newSocketPath(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "s.sock")
}

// startDaemon runs a fresh daemon with a state dir in t.TempDir().
func startDaemon(t testing.TB) *daemon {
	t.Helper()
	return startDaemonAt(t, filepath.Join(t.TempDir(), "state"), newSocketPath(t))
}

// startDaemonAt runs a daemon on the given state dir and socket and waits
// until sessionctl version answers. Cleanup stops it with SIGTERM.
func startDaemonAt(t testing.TB, stateDir, sock string) *daemon {
	t.Helper()
	return startDaemonWith(t, stateDir, sock, "")
}

// startDaemonWith is startDaemonAt with a daemon config file holding
// configTOML.
func startDaemonWith(t testing.TB, stateDir, sock, configTOML string) *daemon {
	t.Helper()
	return startBuild(t, sessiondBin, nil, stateDir, sock, configTOML)
}

// startDaemonExtra is startDaemon with files inherited by the daemon's
// process, open and not close-on-exec (descriptors 3 and up).
func startDaemonExtra(t testing.TB, files ...*os.File) *daemon {
	t.Helper()
	return startProcess(t, sessiondBin, nil, filepath.Join(t.TempDir(), "state"), newSocketPath(t), "", files)
}

// startBuild is startDaemonWith for the sessiond executable bin, with env
// added to the daemon's environment.
func startBuild(t testing.TB, bin string, env []string, stateDir, sock, configTOML string) *daemon {
	t.Helper()
	return startProcess(t, bin, env, stateDir, sock, configTOML, nil)
}

func startProcess(t testing.TB, bin string, env []string, stateDir, sock, configTOML string, extra []*os.File) *daemon {
	t.Helper()
	tmp := t.TempDir()
	d := &daemon{t: t, sock: sock, stateDir: stateDir, logPath: filepath.Join(tmp, "sessiond.log"), exited: make(chan struct{})}
	logf, err := os.OpenFile(d.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cfg := emptyConfig(t)
	if configTOML != "" {
		if err := os.WriteFile(cfg, []byte(configTOML), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d.cmd = exec.Command(bin, "run", "--config", cfg,
		"--state-dir", stateDir, "--socket", sock, "--log-level", "debug")
	d.cmd.Env = append(cleanEnv(), env...)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.ExtraFiles = extra
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start sessiond: %v", err)
	}
	go func() {
		d.exitErr = d.cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		if !d.stopped {
			d.stop()
		}
		if t.Failed() {
			d.dumpLog()
		}
		// The watcher's directory a daemon killed with SIGKILL left, which
		// only a next daemon of the state dir would remove: the last
		// daemon of it is gone by now (cleanups run last first).
		_ = os.RemoveAll(filepath.Join(os.TempDir(), cgroup.NameFor(stateDir)+"-watch"))
	})
	waitFor(t, 15*time.Second, "sessiond to answer on "+sock, func() (bool, string) {
		select {
		case <-d.exited:
			t.Fatalf("sessiond exited before it answered: %v", d.exitErr)
		default:
		}
		r := runCtl(t, sock, nil, "version")
		return r.code == 0, r.String()
	})
	return d
}

func (d *daemon) dumpLog() {
	data, _ := os.ReadFile(d.logPath)
	d.t.Logf("sessiond log (%s):\n%s", d.logPath, data)
}

// emptyConfig returns an empty config file: the embedded defaults,
// whatever /etc or $XDG_CONFIG_HOME hold on this machine.
func emptyConfig(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sessiond.toml")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// killOnCleanup makes sure the processes a test recorded are gone when it
// ends, whatever the daemon did, so that a failing test leaks nothing.
func killOnCleanup(t testing.TB, pids ...int) {
	t.Cleanup(func() {
		for _, pid := range pids {
			if alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}

// stop sends SIGTERM and waits for the daemon to exit; it returns the exit
// code.
func (d *daemon) stop() int {
	d.t.Helper()
	d.stopped = true
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		d.t.Errorf("sessiond did not exit within 30s of SIGTERM; killing it")
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
	return exitCode(d.exitErr)
}

// kill9 kills the daemon with SIGKILL, as a crash would.
func (d *daemon) kill9() {
	d.t.Helper()
	d.stopped = true
	_ = d.cmd.Process.Kill()
	<-d.exited
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// cleanEnv is the test's environment without sessiond's own variables, so
// that only the flags a test gives say where the daemon is.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SESSIOND_") || strings.HasPrefix(kv, "NOTIFY_SOCKET=") || strings.HasPrefix(kv, "NO_COLOR=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// result is what a command printed and how it exited.
type result struct {
	args   []string
	stdout string
	stderr string
	code   int
}

func (r result) String() string {
	return fmt.Sprintf("%q: exit %d\nstdout: %s\nstderr: %s", r.args, r.code, r.stdout, r.stderr)
}

// runCtl runs sessionctl --socket sock args..., with extra env if given.
func runCtl(t testing.TB, sock string, env []string, args ...string) result {
	t.Helper()
	full := append([]string{"--socket", sock}, args...)
	return execute(t, append(cleanEnv(), env...), sessionctlBin, full...)
}

// execute runs a program to completion, bounded in time.
func execute(t testing.TB, env []string, name string, args ...string) result {
	t.Helper()
	return executeWithin(t, 60*time.Second, env, name, args...)
}

// executeWithin is execute with the bound limit.
func executeWithin(t testing.TB, limit time.Duration, env []string, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{args: append([]string{filepath.Base(name)}, args...), stdout: out.String(), stderr: errb.String(), code: exitCode(err)}
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish within %s\n%s", r.args, limit, r)
	}
	if err != nil && r.code == -1 {
		t.Fatalf("run %s: %v", name, err)
	}
	return r
}

// ctl runs sessionctl against the daemon.
func (d *daemon) ctl(args ...string) result {
	d.t.Helper()
	return runCtl(d.t, d.sock, nil, args...)
}

// mustCtl runs sessionctl and fails the test unless it exits 0.
func (d *daemon) mustCtl(args ...string) string {
	d.t.Helper()
	r := d.ctl(args...)
	if r.code != 0 {
		d.t.Fatalf("sessionctl failed:\n%s", r)
	}
	return r.stdout
}

// start starts a session with sessionctl start -q and returns its id.
func (d *daemon) start(args ...string) string {
	d.t.Helper()
	out := strings.TrimSpace(d.mustCtl(append([]string{"start", "-q"}, args...)...))
	if !validID(out) {
		d.t.Fatalf("start -q printed %q, want a session id alone", out)
	}
	return out
}

func validID(s string) bool {
	if len(s) < 4 || len(s) > 32 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// record is the session record as the wire and session.json carry it
// (DESIGN §5.5), decoded independently of the product's Go types.
type record struct {
	ID             string     `json:"id"`
	Name           string     `json:"name"`
	ProjectDir     string     `json:"project_dir"`
	ProjectID      string     `json:"project_id"`
	Command        []string   `json:"command"`
	State          string     `json:"state"`
	PID            int        `json:"pid"`
	StartedAt      time.Time  `json:"started_at"`
	EndedAt        *time.Time `json:"ended_at"`
	Deadline       time.Time  `json:"deadline"`
	WarnAt         time.Time  `json:"warn_at"`
	EndReason      string     `json:"end_reason"`
	ExitCode       *int       `json:"exit_code"`
	Signal         string     `json:"signal"`
	Restarts       int        `json:"restarts"`
	RestartOf      string     `json:"restart_of"`
	LastActivity   *time.Time `json:"last_activity"`
	LastFileEdited string     `json:"last_file_edited"`
	FilesChanged   []string   `json:"files_changed"`
	Warnings       []string   `json:"warnings"`
	Checkpoints    int        `json:"checkpoints"`
	LastCheckpoint string     `json:"last_checkpoint"`
	LogPath        string     `json:"log_path"`
	Warning        *struct {
		At       time.Time `json:"at"`
		Signal   string    `json:"signal"`
		Signaled []int     `json:"signaled"`
		Skipped  []struct {
			PID    int    `json:"pid"`
			Reason string `json:"reason"`
		} `json:"skipped"`
		Hook string `json:"hook"`
	} `json:"warning"`
	HandoffPath string `json:"handoff_path"`
}

// recordFields are the keys every session record carries (DESIGN §5.5).
var recordFields = []string{"id", "name", "project_dir", "project_id", "command", "state", "pid",
	"started_at", "ended_at", "deadline", "warn_at", "end_reason", "exit_code", "signal", "restarts",
	"restart_of", "last_activity", "last_file_edited", "files_changed", "checkpoints",
	"last_checkpoint", "log_path"}

// inspect returns the session's record through sessionctl inspect.
func (d *daemon) inspect(id string) record {
	d.t.Helper()
	var rec record
	out := d.mustCtl("inspect", id)
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		d.t.Fatalf("inspect %s: %v\n%s", id, err, out)
	}
	return rec
}

// list returns ps --json (with -a if all).
func (d *daemon) list(all bool) []record {
	d.t.Helper()
	args := []string{"--json", "ps"}
	if all {
		args = append(args, "-a")
	}
	out := d.mustCtl(args...)
	var recs []record
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		d.t.Fatalf("ps --json: %v\n%s", err, out)
	}
	return recs
}

// waitState waits until the session's state is one of states.
func (d *daemon) waitState(id string, timeout time.Duration, states ...string) record {
	d.t.Helper()
	var rec record
	waitFor(d.t, timeout, fmt.Sprintf("session %s to be %v", id, states), func() (bool, string) {
		rec = d.inspect(id)
		for _, s := range states {
			if rec.State == s {
				return true, ""
			}
		}
		return false, fmt.Sprintf("state %s (end reason %q)", rec.State, rec.EndReason)
	})
	return rec
}

// waitEnded waits until the session has ended (or failed).
func (d *daemon) waitEnded(id string, timeout time.Duration) record {
	d.t.Helper()
	return d.waitState(id, timeout, "ended", "failed")
}

// readRecordFile reads the session's session.json from the state dir.
func (d *daemon) readRecordFile(id string) (record, []byte) {
	d.t.Helper()
	p := filepath.Join(d.stateDir, "sessions", id, "session.json")
	data, err := os.ReadFile(p)
	if err != nil {
		d.t.Fatalf("read session record: %v", err)
	}
	var rec record
	if err := json.Unmarshal(data, &rec); err != nil {
		d.t.Fatalf("decode %s: %v\n%s", p, err, data)
	}
	return rec, data
}

// project returns a new project directory, symlinks resolved as the daemon
// records it.
func project(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// script writes an executable bash script into dir and returns its path.
func script(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/bash\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// readPID reads a pid a script wrote to a file, waiting for it.
func readPID(t testing.TB, path string) int {
	t.Helper()
	var pid int
	waitFor(t, 10*time.Second, "pid file "+path, func() (bool, string) {
		data, err := os.ReadFile(path)
		if err != nil {
			return false, err.Error()
		}
		s := strings.TrimSpace(string(data))
		if !strings.HasSuffix(string(data), "\n") {
			return false, "partial: " + s
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return false, err.Error()
		}
		pid = n
		return true, ""
	})
	return pid
}

// alive reports whether pid is a live process: it exists and is not a
// zombie (a zombie is dead, only not yet reaped).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return false
	}
	switch data[i+2] {
	case 'Z', 'X', 'x':
		return false
	}
	return true
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// waitFile waits until path exists and returns its content. A file a
// shell redirection writes can be seen empty: waitLine waits for its content.
func waitFile(t testing.TB, path string, timeout time.Duration) []byte {
	t.Helper()
	var data []byte
	waitFor(t, timeout, path+" to exist", func() (bool, string) {
		var err error
		data, err = os.ReadFile(path)
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	return data
}

// perm returns path's permission bits.
func perm(t testing.TB, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// with returns a view of d that reports to t, for subtests sharing a
// daemon.
func (d *daemon) with(t testing.TB) *daemon {
	c := *d
	c.t = t
	return &c
}

// waitLine waits until path holds at least one whole line (a shell
// redirection creates the file before it writes) and returns the content.
func waitLine(t testing.TB, path string, timeout time.Duration) []byte {
	t.Helper()
	var data []byte
	waitFor(t, timeout, "a line in "+path, func() (bool, string) {
		var err error
		data, err = os.ReadFile(path)
		if err != nil {
			return false, err.Error()
		}
		return bytes.HasSuffix(data, []byte("\n")), string(data)
	})
	return data
}
