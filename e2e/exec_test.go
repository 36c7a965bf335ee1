package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// execRun is a sessiond exec running as PID 1 of a new PID namespace, as in
// a container.
type execRun struct {
	cmd            *exec.Cmd
	stdout, stderr syncBuffer // read while the exec writes
	done           chan struct{}
	code           int
}

// startExec runs `sessiond exec args...` under unshare --pid --fork, so
// that sessiond is PID 1 there.
func startExec(t *testing.T, env []string, args ...string) *execRun {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatalf("unshare (util-linux) is needed to run sessiond as PID 1: %v", err)
	}
	full := append([]string{"--pid", "--fork", "--mount-proc", sessiondBin, "exec"}, args...)
	r := &execRun{cmd: exec.Command("unshare", full...), done: make(chan struct{})}
	r.cmd.Env = append(cleanEnv(), env...)
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("unshare: %v", err)
	}
	go func() {
		err := r.cmd.Wait()
		r.code = exitCode(err)
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = r.cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

// wait waits for the exec to end and returns its exit status.
func (r *execRun) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(timeout):
		t.Fatalf("sessiond exec did not end within %s\nstdout: %s\nstderr: %s", timeout, r.stdout.String(), r.stderr.String())
	}
	return r.code
}

// sessiondPID is sessiond's pid as this (outer) namespace sees it: the
// child of unshare.
func (r *execRun) sessiondPID(t *testing.T) int {
	t.Helper()
	var pid int
	waitFor(t, 10*time.Second, "sessiond under unshare", func() (bool, string) {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(r.cmd.Process.Pid) + "/task/" + strconv.Itoa(r.cmd.Process.Pid) + "/children")
		if err != nil {
			return false, err.Error()
		}
		f := strings.Fields(string(data))
		if len(f) == 0 {
			return false, "no child yet"
		}
		pid, _ = strconv.Atoi(f[0])
		return pid > 0, string(data)
	})
	return pid
}

func TestExecAsPID1ReapsZombies(t *testing.T) {
	dir := project(t)
	agent := script(t, dir, "agent.sh", `echo "init: $(cat /proc/1/comm)"
# Each sh exits at once: its sleep is orphaned to PID 1, which must reap it.
for i in 1 2 3 4 5; do sh -c 'sleep 0.2 &'; done
sleep 1
echo "zombies: $(ps -eo stat= | grep -c '^Z')"
`)
	r := startExec(t, nil, "--checkpoint", "", dir, "--", agent)
	if code := r.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, r.stdout.String(), r.stderr.String())
	}
	out := r.stdout.String()
	if !strings.Contains(out, "init: sessiond\n") {
		t.Errorf("stdout = %q, want the agent's output showing sessiond as PID 1", out)
	}
	if !strings.Contains(out, "zombies: 0\n") {
		t.Errorf("zombies left in the namespace: %q", out)
	}
	if !strings.Contains(r.stderr.String(), "ended complete") {
		t.Errorf("no summary line on stderr: %q", r.stderr.String())
	}
	if h := readHandoff(t, dir); h.EndReason != "complete" {
		t.Errorf("handoff end_reason = %v", h.EndReason)
	}
}

func TestExecSIGTERMWritesHandoffBeforeExit(t *testing.T) {
	dir := project(t)
	agent := script(t, dir, "agent.sh", `trap 'echo got TERM; sleep 0.5; exit 0' TERM
echo ready
while :; do sleep 0.1; done
`)
	r := startExec(t, nil, "--checkpoint", "", "--stop-grace", "5s", dir, "--", agent)
	pid := r.sessiondPID(t)
	// Its trap is set once it says ready: a SIGTERM before would kill it.
	waitFor(t, 10*time.Second, "the agent to start", func() (bool, string) {
		return fileExists(filepath.Join(dir, ".sessiond", "session.lock")) && strings.Contains(r.stdout.String(), "ready"), ""
	})
	t0 := time.Now()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code := r.wait(t, 20*time.Second)
	took := time.Since(t0)
	if code != 0 {
		t.Errorf("exit %d, want the agent's own 0\nstderr: %s", code, r.stderr.String())
	}
	if took > 6*time.Second {
		t.Errorf("took %v to end after SIGTERM, want within stop_grace (5s) + 1s", took)
	}
	h := readHandoff(t, dir)
	if h.EndReason != "interrupted" {
		t.Errorf("handoff end_reason = %v, want interrupted", h.EndReason)
	}
	if !strings.Contains(r.stdout.String(), "got TERM") {
		t.Errorf("the agent did not get the stop signal: %q", r.stdout.String())
	}
	if fileExists(filepath.Join(dir, ".sessiond", "session.lock")) {
		t.Error("session.lock left behind")
	}
}

func TestExecDeadlineWarnsThenExitsWithTheTimeoutCode(t *testing.T) {
	dir := project(t)
	agent := script(t, dir, "agent.sh", `while :; do
  if [ -f .sessiond/warning.json ]; then echo warned; "$SESSIONCTL" report --summary "wrapped up at the warning"; sleep 100; fi
  sleep 0.1
done
`)
	r := startExec(t, []string{"SESSIONCTL=" + sessionctlBin, "SCHED_DEADLINE=9"},
		"--checkpoint", "", "--deadline-from-env", "SCHED_DEADLINE", "--warn-before", "2s", "--stop-grace", "1s", dir, "--", agent)
	code := r.wait(t, 30*time.Second)
	if code != 124 {
		t.Fatalf("exit %d, want 124 (timeout)\nstdout: %s\nstderr: %s", code, r.stdout.String(), r.stderr.String())
	}
	if !strings.Contains(r.stdout.String(), "warned") {
		t.Errorf("the agent saw no warning before the deadline: %q", r.stdout.String())
	}
	h := readHandoff(t, dir)
	if h.EndReason != "timeout" {
		t.Errorf("handoff end_reason = %v", h.EndReason)
	}
	// 9 s from the scheduler, less the 5 s margin: a 4 s deadline.
	if took := h.EndedAt.Sub(h.StartedAt); took < 3500*time.Millisecond || took > 6*time.Second {
		t.Errorf("session ran %v, want about 4s (the scheduler's 9s less the margin)", took)
	}
	state, err := os.ReadFile(filepath.Join(dir, ".sessiond", "session_state.json"))
	if err != nil || !strings.Contains(string(state), "wrapped up at the warning") {
		t.Errorf("the report from inside did not reach the state: %v\n%s", err, state)
	}

	// A second run in the same project starts from the first one's handoff.
	first := h.SessionID
	r2 := startExec(t, nil, "--checkpoint", "", dir, "--", "sh", "-c", `cat "$SESSIOND_CONTEXT_FILE"`)
	if code := r2.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("second run: exit %d\n%s", code, r2.stderr.String())
	}
	if !strings.Contains(r2.stderr.String(), "Restoring session") || !strings.Contains(r2.stderr.String(), "wrapped up at the warning") {
		t.Errorf("the second run did not restore the first: %q", r2.stderr.String())
	}
	if !strings.Contains(r2.stdout.String(), first) {
		t.Errorf("the second run's context does not cite session %s:\n%s", first, r2.stdout.String())
	}
}

// TestExecShortTimeout is what a newcomer types: a timeout of seconds,
// no --warn-before. The warning comes a quarter of it ahead, and exec
// exits with the timeout's code, 124.
func TestExecShortTimeout(t *testing.T) {
	t.Parallel()
	dir := project(t)
	agent := script(t, dir, "agent.sh", `while :; do
  if [ -f .sessiond/warning.json ]; then echo warned; sleep 100; fi
  sleep 0.1
done
`)
	r := startExec(t, nil, "--checkpoint", "", "--timeout", "4s", dir, "--", agent)
	if code := r.wait(t, 30*time.Second); code != 124 {
		t.Fatalf("exit %d, want 124 (timeout)\nstderr: %s", code, r.stderr.String())
	}
	if !strings.Contains(r.stdout.String(), "warned") {
		t.Errorf("no warning before the deadline: %q", r.stdout.String())
	}
	if h := readHandoff(t, dir); h.EndReason != "timeout" {
		t.Errorf("handoff end_reason = %v, want timeout", h.EndReason)
	}
}

func TestExecBadInput(t *testing.T) {
	dir := project(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tt := range []struct {
		args []string
		env  []string
		code int
		msg  string
	}{
		{[]string{"--timeout", "abc", dir, "--", "true"}, nil, 2, "--timeout"},
		{[]string{"--deadline-from-env", "D", dir, "--", "true"}, []string{"D=soon"}, 2, "want seconds"},
		{[]string{"--deadline-from-env", "D", dir, "--", "true"}, []string{"D=3"}, 2, "no time to run"},
		{[]string{dir, "--", "no-such-command-here"}, nil, 1, "not found"},
		{[]string{"--timeout", "10s", "--warn-before", "30s", dir, "--", "true"}, nil, 1, "give a shorter warn_before (sessionctl start --warn-before)"},
		{[]string{"/nonexistent/dir", "--", "true"}, nil, 2, "nonexistent"},
		{[]string{"--bogus", dir, "--", "true"}, nil, 2, "unknown flag: --bogus"},
		{[]string{"--count", "2", dir, "--", "true"}, nil, 2, "unknown flag: --count"},
	} {
		cmd := exec.CommandContext(ctx, sessiondBin, append([]string{"exec"}, tt.args...)...)
		cmd.Env = append(cleanEnv(), tt.env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if got := exitCode(err); got != tt.code || !strings.Contains(stderr.String(), tt.msg) {
			t.Errorf("exec %v: exit %d %q, want %d saying %q", tt.args, got, stderr.String(), tt.code, tt.msg)
		}
	}
}

// TestExecForwardsEveryStopSignal: SIGINT, SIGHUP and SIGQUIT, like
// SIGTERM, stop the session gracefully (the spec's stop signal to the
// command, the handoff on disk before exit); a second signal kills at once.
func TestExecForwardsEveryStopSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			dir := project(t)
			agent := script(t, dir, "agent.sh", `trap 'echo got TERM; exit 0' TERM
touch trapped
while :; do sleep 0.1; done
`)
			r := startExec(t, nil, "--checkpoint", "", "--stop-grace", "5s", dir, "--", agent)
			pid := r.sessiondPID(t)
			// The agent's shell has set its trap: before that, its exit on
			// the stop signal would be 143, the shell's, not the agent's.
			waitFor(t, 10*time.Second, "the agent to set its trap", func() (bool, string) {
				return fileExists(filepath.Join(dir, "trapped")), ""
			})
			if err := syscall.Kill(pid, sig); err != nil {
				t.Fatal(err)
			}
			if code := r.wait(t, 20*time.Second); code != 0 {
				t.Errorf("exit %d after %v, want the agent's own 0\nstderr: %s", code, sig, r.stderr.String())
			}
			if h := readHandoff(t, dir); h.EndReason != "interrupted" {
				t.Errorf("handoff end_reason = %v, want interrupted", h.EndReason)
			}
			if !strings.Contains(r.stdout.String(), "got TERM") {
				t.Errorf("the agent did not get the stop signal after %v: %q", sig, r.stdout.String())
			}
		})
	}
	t.Run("during the start", func(t *testing.T) {
		// A signal that comes while the session starts (its preflight
		// runs) stops it once it runs, with its handoff: it does not kill
		// sessiond first.
		t.Parallel()
		dir := project(t)
		writeFile(t, filepath.Join(dir, "sessiond.toml"), "[session]\npreflight = [\"touch preflight-began; sleep 1\"]\n")
		agent := script(t, dir, "agent.sh", `trap 'echo got TERM; exit 0' TERM
while :; do sleep 0.1; done
`)
		r := startExec(t, nil, "--checkpoint", "", "--stop-grace", "5s", dir, "--", agent)
		pid := r.sessiondPID(t)
		waitFor(t, 10*time.Second, "the preflight to begin", func() (bool, string) {
			return fileExists(filepath.Join(dir, "preflight-began")), ""
		})
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		// The stop comes as soon as the agent runs, before or after its
		// shell set the trap: sessiond exits with the agent's code, 0 or
		// 143 (killed by the SIGTERM), never its own.
		if code := r.wait(t, 20*time.Second); code != 0 && code != 128+int(syscall.SIGTERM) {
			t.Errorf("exit %d after a SIGTERM during the start, want the agent's own 0 or 143\nstderr: %s", code, r.stderr.String())
		} else if out := r.stderr.String(); !strings.Contains(out, "ended interrupted") || !strings.Contains(out, "(exit "+strconv.Itoa(code)+")") {
			t.Errorf("stderr %q, want the session ended interrupted with exit %d", out, code)
		}
		if h := readHandoff(t, dir); h.EndReason != "interrupted" {
			t.Errorf("handoff end_reason = %v, want interrupted", h.EndReason)
		}
	})
	t.Run("second signal", func(t *testing.T) {
		t.Parallel()
		dir := project(t)
		agent := script(t, dir, "agent.sh", `trap '' TERM
touch trapped
while :; do sleep 0.1; done
`)
		r := startExec(t, nil, "--checkpoint", "", "--stop-grace", "60s", dir, "--", agent)
		pid := r.sessiondPID(t)
		waitFor(t, 10*time.Second, "the agent to set its trap", func() (bool, string) {
			return fileExists(filepath.Join(dir, "trapped")), ""
		})
		t0 := time.Now()
		_ = syscall.Kill(pid, syscall.SIGTERM)
		time.Sleep(300 * time.Millisecond)
		_ = syscall.Kill(pid, syscall.SIGTERM)
		code := r.wait(t, 20*time.Second)
		if took := time.Since(t0); took > 10*time.Second {
			t.Errorf("took %v with a second signal, want far less than the 60s grace", took)
		}
		if code != 128+int(syscall.SIGKILL) {
			t.Errorf("exit %d, want %d (killed)\nstderr: %s", code, 128+int(syscall.SIGKILL), r.stderr.String())
		}
		if h := readHandoff(t, dir); h.EndReason != "interrupted" {
			t.Errorf("handoff end_reason = %v, want interrupted", h.EndReason)
		}
	})
}

// TestExecIdleExitCode: a session that stays idle past its idle timeout
// ends, and exec exits with the idle code, 121.
func TestExecIdleExitCode(t *testing.T) {
	t.Parallel()
	dir := project(t)
	r := startExec(t, nil, "--checkpoint", "", "--idle-timeout", "2s", "--stop-grace", "1s", dir, "--", "sleep", "60")
	if code := r.wait(t, 30*time.Second); code != 121 {
		t.Fatalf("exit %d, want 121 (idle)\nstderr: %s", code, r.stderr.String())
	}
	if h := readHandoff(t, dir); h.EndReason != "idle" {
		t.Errorf("handoff end_reason = %v, want idle", h.EndReason)
	}
	if !strings.Contains(r.stderr.String(), "ended idle") {
		t.Errorf("summary line: %q", r.stderr.String())
	}
}

// TestExecKeepsNoEnvironmentInTheProject: the caller's environment reaches
// the command, and the exec keeps none of it in the project's
// .sessiond/exec once it exits (a container's volume keeps that dir).
func TestExecKeepsNoEnvironmentInTheProject(t *testing.T) {
	t.Parallel()
	dir := project(t)
	if err := os.WriteFile(filepath.Join(dir, "expected"), []byte("s3cr3t-value"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startExec(t, []string{"E2E_EXEC_SECRET=s3cr3t-value"}, "--checkpoint", "", dir, "--", "sh", "-c", `test "$E2E_EXEC_SECRET" = "$(cat expected)"`)
	if code := r.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d, want 0 (the command saw the caller's environment)\nstderr: %s", code, r.stderr.String())
	}
	filepath.Walk(filepath.Join(dir, ".sessiond"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return nil
		}
		if data, _ := os.ReadFile(p); strings.Contains(string(data), "s3cr3t-value") {
			t.Errorf("%s keeps the caller's environment after the exec", p)
		}
		return nil
	})
}
