package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// userBin makes a directory the user can run programs from, holding a
// program name that runs script.
func userBin(t *testing.T, name, script string) string {
	t.Helper()
	dir := t.TempDir()
	for p := dir; p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		_ = os.Chmod(p, 0o755)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// lastID is the session id a `sessionctl start` printed last.
func lastID(t *testing.T, r result) string {
	t.Helper()
	f := strings.Fields(r.stdout)
	if r.code != 0 || len(f) == 0 {
		t.Fatalf("start:\n%s", r)
	}
	return f[len(f)-1]
}

// grepTree reports the files under dir that hold marker.
func grepTree(dir, marker string) []string {
	var hits []string
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(marker)) {
				hits = append(hits, p)
			}
		}
		return nil
	})
	return hits
}

// stopWithin stops a session as the user and fails unless the stop
// returns within d.
func stopWithin(t *testing.T, u tuser, d *daemon, id string, within time.Duration) {
	t.Helper()
	t0 := time.Now()
	r := u.ctl(t, d.sock, "stop", "--grace", "1s", id)
	if r.code != 0 {
		t.Errorf("stop %s:\n%s", id, r)
	}
	if took := time.Since(t0); took > within {
		t.Errorf("stop took %v, want within %v", took, within)
	}
}

// TestRootDaemonOneWayIn runs, as an ordinary user against a root daemon,
// each attack on the code that reads a user's files for an agent, a hook
// or the watcher, and on sessiond exec, logs, names, the agent's powers,
// webhooks and descriptors: what the user names is read with the user's
// rights and never blocks the daemon.
func TestRootDaemonOneWayIn(t *testing.T) {
	u := newUser(t)
	d := rootDaemon(t, u)

	t.Run("--settings naming a root-only file", func(t *testing.T) {
		secret := rootFile(t, "settings.json", `{"env":{"TOPSECRET_SETTING":"x"}}`)
		bin := userBin(t, "claude", "exec sleep 1000")
		dir := u.project(t)
		r := u.ctl(t, d.sock, "start", "--env", "PATH="+bin+":/usr/bin:/bin", dir, "--", "claude", "-p", "hi", "--settings", secret)
		id := lastID(t, r)
		d.waitState(id, 10*time.Second, "running")
		if hits := grepTree(dir, "TOPSECRET_SETTING"); len(hits) > 0 {
			t.Errorf("the root-only settings landed in %v", hits)
		}
		if rec := d.inspect(id); strings.Contains(fmt.Sprint(rec.Command), "TOPSECRET") {
			t.Errorf("the record holds the root-only settings")
		}
		stopWithin(t, u, d, id, 10*time.Second)
	})

	t.Run("--settings naming a FIFO", func(t *testing.T) {
		dir := u.project(t)
		fifo := filepath.Join(dir, "settings.fifo")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		_ = os.Chown(fifo, u.uid, u.gid)
		bin := userBin(t, "claude", "exec sleep 1000")
		done := make(chan result, 1)
		go func() {
			done <- u.ctl(t, d.sock, "start", "--env", "PATH="+bin+":/usr/bin:/bin", dir, "--", "claude", "-p", "hi", "--settings", fifo)
		}()
		select {
		case r := <-done:
			id := lastID(t, r)
			stopWithin(t, u, d, id, 10*time.Second)
		case <-time.After(10 * time.Second):
			// Open the FIFO to let a wedged start go on.
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				f.Close()
			}
			t.Fatal("a start with --settings naming a FIFO did not return within 10s")
		}
	})

	t.Run("a hook's transcript_path naming a root-only file, then a FIFO", func(t *testing.T) {
		line := `{"type":"assistant","message":{"id":"m1","usage":{"input_tokens":777001,"output_tokens":1}},"requestId":"r1"}` + "\n"
		secret := rootFile(t, "transcript.jsonl", line)
		bin := userBin(t, "claude", "exec sleep 1000")
		dir := u.project(t)
		id := lastID(t, u.ctl(t, d.sock, "start", "--env", "PATH="+bin+":/usr/bin:/bin", dir, "--", "claude", "-p", "hi"))
		d.waitState(id, 10*time.Second, "running")
		hook := func(transcript string) result {
			payload, _ := json.Marshal(map[string]any{"hook_event_name": "PostToolUse", "tool_name": "Bash",
				"session_id": "2f7e8a3c-4b5d-4e6f-8a9b-0c1d2e3f4a5b", "transcript_path": transcript, "cwd": dir})
			cmd := exec.Command(sessionctlBin, "--socket", d.sock, "hook", "claude-code")
			cmd.Env = append(cleanEnv(), "SESSIOND_SESSION_ID="+id, "HOME=/tmp")
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
			cmd.Stdin = bytes.NewReader(payload)
			out, err := cmd.CombinedOutput()
			return result{stdout: string(out), code: exitCode(err)}
		}
		hook(secret)
		if out := d.mustCtl("inspect", id); strings.Contains(out, "777001") {
			t.Errorf("the tokens of a root-only transcript are in the record:\n%s", out)
		}
		fifo := filepath.Join(dir, "transcript.fifo")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		_ = os.Chown(fifo, u.uid, u.gid)
		hooked := make(chan struct{})
		go func() { hook(fifo); close(hooked) }()
		select {
		case <-hooked:
		case <-time.After(10 * time.Second):
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				f.Close()
			}
			t.Fatal("a hook naming a FIFO transcript did not return within 10s")
		}
		stopWithin(t, u, d, id, 10*time.Second)
	})

	t.Run("CODEX_HOME naming a root-only directory", func(t *testing.T) {
		home := filepath.Dir(rootFile(t, "config.toml", `notify = ["/bin/echo", "TOPSECRET_NOTIFY"]`+"\n"))
		// The shell stays, with the command line it was given.
		bin := userBin(t, "codex", "sleep 1000")
		dir := u.project(t)
		id := lastID(t, u.ctl(t, d.sock, "start", "--env", "PATH="+bin+":/usr/bin:/bin", "--env", "CODEX_HOME="+home, dir, "--", "codex", "exec", "hi"))
		d.waitState(id, 10*time.Second, "running")
		rec := d.inspect(id)
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", rec.PID))
		if bytes.Contains(cmdline, []byte("TOPSECRET_NOTIFY")) {
			t.Errorf("root's config.toml's notify is on the command line: %q", cmdline)
		}
		stopWithin(t, u, d, id, 10*time.Second)
	})

	t.Run("a FIFO at .git/info/exclude", func(t *testing.T) {
		dir := u.project(t)
		mustRun(t, "runuser", "-u", u.name, "--", "git", "init", "-q", dir)
		ex := filepath.Join(dir, ".git", "info", "exclude")
		_ = os.Remove(ex)
		if err := syscall.Mkfifo(ex, 0o644); err != nil {
			t.Fatal(err)
		}
		_ = os.Chown(ex, u.uid, u.gid)
		writer := make(chan struct{})
		defer close(writer)
		id := lastID(t, u.ctl(t, d.sock, "start", dir, "--", "sh", "-c", "touch a.txt; sleep 1000"))
		d.waitState(id, 10*time.Second, "running")
		mustRun(t, "runuser", "-u", u.name, "--", "touch", filepath.Join(dir, "b.txt"))
		stopWithin(t, u, d, id, 30*time.Second)
	})

	t.Run("a directory exchanged with a symlink to a root-only directory while the watcher scans", func(t *testing.T) {
		rootDir := filepath.Dir(rootFile(t, "TOPSECRET-0", "x"))
		for i := 1; i < 20; i++ {
			_ = os.WriteFile(filepath.Join(rootDir, fmt.Sprintf("TOPSECRET-%d", i)), nil, 0o600)
		}
		dir := u.project(t)
		id := lastID(t, u.ctl(t, d.sock, "start", dir, "--", "sleep", "1000"))
		d.waitState(id, 10*time.Second, "running")
		// New directories, each swapped at once with a link to the root-only
		// one, as the watcher comes to scan them.
		deadline := time.Now().Add(3 * time.Second)
		for i := 0; time.Now().Before(deadline); i++ {
			sub := filepath.Join(dir, fmt.Sprintf("d%d", i))
			link := filepath.Join(dir, fmt.Sprintf("l%d", i))
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			_ = os.Symlink(rootDir, link)
			for k := 0; k < 50; k++ {
				_ = unix.Renameat2(unix.AT_FDCWD, sub, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
			}
		}
		time.Sleep(500 * time.Millisecond) // the last batch of events handled
		if rec := d.inspect(id); strings.Contains(strings.Join(rec.FilesChanged, " "), "TOPSECRET") {
			t.Errorf("files_changed lists a root-only directory's files: %v", rec.FilesChanged)
		}
		stopWithin(t, u, d, id, 10*time.Second)
	})

	t.Run("root's logs of a user's session print no raw escape", func(t *testing.T) {
		dir := u.project(t)
		id := lastID(t, u.ctl(t, d.sock, "start", dir, "--", "sh", "-c", `printf '\033]0;PWNED\007\033[2Jhello\n'`))
		d.waitEnded(id, 10*time.Second)
		out := d.mustCtl("logs", id)
		if strings.ContainsRune(out, 0x1b) || strings.ContainsRune(out, 0x07) || !strings.Contains(out, "hello") {
			t.Errorf("root's sessionctl logs printed %q, want the text without its control sequences", out)
		}
		if raw := d.mustCtl("logs", "--raw", id); !strings.ContainsRune(raw, 0x1b) {
			t.Errorf("logs --raw printed %q, want the raw bytes", raw)
		}
	})

	t.Run("a name two users' live sessions hold", func(t *testing.T) {
		mine := d.start("--name", "twin", project(t), "--", "sleep", "100")
		theirs := lastID(t, u.ctl(t, d.sock, "start", "--name", "twin", u.project(t), "--", "sleep", "100"))
		for range 5 {
			r := d.ctl("inspect", "twin")
			if r.code == 0 || !strings.Contains(r.stderr, "root/twin") || !strings.Contains(r.stderr, u.name+"/twin") {
				t.Fatalf("root's inspect twin:\n%s\nwant an error listing root/twin and %s/twin", r, u.name)
			}
		}
		if rec := d.inspect(u.name + "/twin"); rec.ID != theirs {
			t.Errorf("inspect %s/twin = %s, want %s", u.name, rec.ID, theirs)
		}
		if rec := d.inspect("root/twin"); rec.ID != mine {
			t.Errorf("inspect root/twin = %s, want %s", rec.ID, mine)
		}
		// The user sees only their own: the name is theirs.
		if r := u.ctl(t, d.sock, "--json", "inspect", "twin"); r.code != 0 || !strings.Contains(r.stdout, theirs) {
			t.Errorf("the user's inspect twin:\n%s", r)
		}
		d.mustCtl("stop", mine)
		u.ctl(t, d.sock, "stop", theirs)
	})

	t.Run("an agent cannot extend itself past agent_may_extend", func(t *testing.T) {
		dir := u.project(t)
		marker := filepath.Join(dir, "extend.out")
		id := lastID(t, u.ctl(t, d.sock, "start", "--timeout", "1h", dir, "--", "sh", "-c",
			fmt.Sprintf("%s extend $SESSIOND_SESSION_ID 100h > %s 2>&1; echo $? >> %s; sleep 1000", sessionctlBin, marker, marker)))
		rec := d.waitState(id, 10*time.Second, "running")
		out := waitLine(t, marker, 10*time.Second)
		for !bytes.Contains(out, []byte("\n0\n")) && !bytes.HasSuffix(bytes.TrimSpace(out), []byte("1")) {
			out = waitLine(t, marker, 10*time.Second)
		}
		after := d.inspect(id)
		if after.Deadline.After(rec.Deadline.Add(time.Minute)) {
			t.Errorf("the session's own process moved its deadline from %v to %v:\n%s", rec.Deadline, after.Deadline, out)
		}
		if !strings.Contains(string(out), "agent_may_extend") {
			t.Errorf("the refusal does not name agent_may_extend:\n%s", out)
		}
		// The person may.
		if r := u.ctl(t, d.sock, "extend", id, "2h"); r.code != 0 {
			t.Errorf("the user's own extend:\n%s", r)
		}
		stopWithin(t, u, d, id, 10*time.Second)
	})

	t.Run("a project's webhook to loopback", func(t *testing.T) {
		rcv := newHookServer(t, map[string][]int{"/probe": {500}})
		dir := u.project(t)
		if err := os.WriteFile(filepath.Join(dir, "sessiond.toml"), []byte(fmt.Sprintf("[[notify]]\nname = \"probe\"\non = [\"ended\"]\nwebhook = %q\n", rcv.URL+"/probe")), 0o644); err != nil {
			t.Fatal(err)
		}
		r := u.ctl(t, d.sock, "--json", "notify", "test", "--dir", dir, "probe")
		if len(rcv.hitsOf("/probe")) > 0 {
			t.Errorf("the root daemon posted to loopback for a user's project, or quoted the answer:\n%s", r)
		}
		if !strings.Contains(r.stdout+r.stderr, "loopback") {
			t.Errorf("notify test does not say the destination is refused:\n%s", r)
		}
		id := lastID(t, u.ctl(t, d.sock, "start", dir, "--", "true"))
		d.waitEnded(id, 10*time.Second)
		time.Sleep(500 * time.Millisecond) // a notification would be on its way
		if got := rcv.hitsOf("/probe"); len(got) > 0 {
			t.Errorf("the root daemon posted %d times to loopback for a user's project", len(got))
		}
	})
}

// TestSessionsGetOnlyTheirDescriptors: a descriptor the daemon inherited
// open (not close-on-exec) never reaches a session, which starts with
// stdin, stdout and stderr alone.
func TestSessionsGetOnlyTheirDescriptors(t *testing.T) {
	leak, err := os.CreateTemp(t.TempDir(), "inherited")
	if err != nil {
		t.Fatal(err)
	}
	defer leak.Close()
	d := startDaemonExtra(t, leak)
	dir := project(t)
	// ls lists its own descriptors: stdin, stdout, stderr, and the one of
	// the directory it reads.
	id := d.start(dir, "--", "ls", "-l", "/proc/self/fd")
	d.waitEnded(id, 10*time.Second)
	for _, line := range strings.Split(strings.TrimSpace(d.mustCtl("logs", id)), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[len(f)-2] != "->" {
			continue
		}
		fd, target := f[len(f)-3], f[len(f)-1]
		switch {
		case target == leak.Name():
			t.Errorf("descriptor %s of the session is the daemon's inherited %s", fd, target)
		case fd != "0" && fd != "1" && fd != "2" && !strings.HasPrefix(target, "/proc/"):
			t.Errorf("the session holds descriptor %s (%s), which sessiond did not give it", fd, target)
		}
	}
}

// TestExecStateDirAndSocket: sessiond exec as root in a user's project
// follows no symlink at .sessiond/exec (nothing is made in, nor changed
// of, what it points to), and its default socket is at no name another
// user could take first.
func TestExecStateDirAndSocket(t *testing.T) {
	u := newUser(t)
	dir := u.project(t)
	target := t.TempDir()
	if err := os.Chmod(target, 0o755); err != nil {
		t.Fatal(err)
	}
	sd := filepath.Join(dir, ".sessiond")
	if err := os.Mkdir(sd, 0o700); err != nil {
		t.Fatal(err)
	}
	_ = os.Chown(sd, u.uid, u.gid)
	if err := os.Symlink(target, filepath.Join(sd, "exec")); err != nil {
		t.Fatal(err)
	}
	_ = os.Lchown(filepath.Join(sd, "exec"), u.uid, u.gid)
	// The name the socket once had: another user takes it first.
	sum := sha256.Sum256([]byte(dir))
	squatted := filepath.Join(os.TempDir(), "sessiond-"+hex.EncodeToString(sum[:])[:12]+".sock")
	if err := os.WriteFile(squatted, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chown(squatted, u.uid, u.gid)
	t.Cleanup(func() { os.Remove(squatted) })
	r := startExec(t, nil, dir, "--", "true")
	code := r.wait(t, 30*time.Second)
	if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("the symlink's target changed: %v, %v", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(target); len(entries) > 0 {
		t.Errorf("sessiond exec made %v in the symlink's target", entries)
	}
	if code == 0 {
		t.Errorf("sessiond exec ran with a symlink at .sessiond/exec, want it refused\nstderr: %s", r.stderr.String())
	} else if !strings.Contains(r.stderr.String(), "symlink") {
		t.Errorf("sessiond exec failed without saying why (exit %d):\n%s", code, r.stderr.String())
	}
	// Without the link, the squatted name is no obstacle.
	if err := os.Remove(filepath.Join(sd, "exec")); err != nil {
		t.Fatal(err)
	}
	r = startExec(t, nil, dir, "--", "true")
	if code := r.wait(t, 30*time.Second); code != 0 {
		t.Errorf("sessiond exec with another user's file at the old socket name: exit %d\n%s", code, r.stderr.String())
	}
}
