package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envProbe is a session command that tells, in its log, what its
// environment holds without writing a value anyone must not see: the
// hash of CALLER_SECRET, whether DAEMON_ONLY reached it, and where
// sessionctl is on its PATH.
const envProbe = `printf 'secret=%s\n' "$(printf %s "$CALLER_SECRET" | sha256sum | cut -c1-16)"
echo "daemon=${DAEMON_ONLY:-unset} pwd_kept=${OLDPWD:-no} path=$PATH"
echo "shell=${SHELL:-unset} user=${USER:-unset}"
echo "sessionctl=$(command -v sessionctl || echo missing)"
echo probed
exec sleep 300`

func hashOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])[:16]
}

// probeLog waits for a session's probe and returns its log.
func (d *daemon) probeLog(id string) string {
	d.t.Helper()
	var out string
	waitFor(d.t, 15*time.Second, "the probe's output", func() (bool, string) {
		out = d.ctl("logs", id).stdout
		return strings.Contains(out, "probed"), out
	})
	return out
}

// TestTheCallersEnvironment is what a newcomer types: a variable set in
// the shell that runs sessionctl start reaches the session, and so does
// its PATH (sessionctl report from inside a session), never the daemon's;
// the value is kept nowhere but the session's environ file, and the
// restart policy's restart after a daemon crash runs with it again.
func TestTheCallersEnvironment(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "state")
	sock := newSocketPath(t)
	d := startBuild(t, sessiondBin, []string{"DAEMON_ONLY=daemon-secret-value"}, state, sock, "[defaults]\ncheckpoint = \"\"\n")
	dir := project(t)
	script(t, dir, "probe.sh", envProbe)
	secret := fmt.Sprintf("caller-secret-%d", rand.Int64())
	shellPath := filepath.Dir(sessionctlBin) + ":/usr/local/bin:/usr/bin:/bin"
	caller := []string{"CALLER_SECRET=" + secret, "PATH=" + shellPath, "OLDPWD=/somewhere"}
	start := func(args ...string) string {
		t.Helper()
		r := runCtl(t, sock, caller, append([]string{"start", "-q"}, args...)...)
		if r.code != 0 {
			t.Fatalf("start: %s", r)
		}
		return strings.TrimSpace(r.stdout)
	}

	id := start("--restart", "always", dir, "--", "sh", "./probe.sh")
	out := d.probeLog(id)
	for _, want := range []string{"secret=" + hashOf(secret), "daemon=unset", "pwd_kept=no", "path=" + shellPath, "sessionctl=" + sessionctlBin} {
		if !strings.Contains(out, want) {
			t.Errorf("the session's log lacks %q:\n%s", want, out)
		}
	}
	environ := filepath.Join(state, "sessions", id, "environ")
	if got := perm(t, environ); got != 0o600 {
		t.Errorf("%s is %v, want 0600", environ, got)
	}
	// The value is in the environ file and nowhere else the daemon writes.
	if found := grepTree(state, secret); len(found) != 1 || found[0] != environ {
		t.Errorf("the caller's value is in %q, want it in %s alone", found, environ)
	}
	for _, args := range [][]string{{"inspect", id}, {"ps", "--json"}, {"events", "--json"}} {
		if r := d.ctl(args...); strings.Contains(r.stdout+r.stderr, secret) {
			t.Errorf("sessionctl %v shows the caller's value", args)
		}
	}

	// The daemon dies; the session's command is then killed: the restart
	// policy's new session runs with the environment the first was given.
	pid := d.inspect(id).PID
	d.kill9()
	d = startDaemonWith(t, state, sock, "[defaults]\ncheckpoint = \"\"\n")
	d.waitState(id, 15*time.Second, "running")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var next string
	waitFor(t, 20*time.Second, "the restart policy's new session", func() (bool, string) {
		for _, r := range d.list(true) {
			if r.RestartOf == id {
				next = r.ID
				return true, ""
			}
		}
		return false, d.mustCtl("ps", "--all")
	})
	if out := d.probeLog(next); !strings.Contains(out, "secret="+hashOf(secret)) || !strings.Contains(out, "sessionctl="+sessionctlBin) {
		t.Errorf("the restarted session lost the caller's environment:\n%s", out)
	}
	if data, _ := os.ReadFile(d.logPath); strings.Contains(string(data), secret) {
		t.Error("the daemon's log shows the caller's value")
	}

	// sessionctl restart by its user: the restarting shell's environment.
	other := fmt.Sprintf("other-secret-%d", rand.Int64())
	caller[0] = "CALLER_SECRET=" + other
	r := runCtl(t, sock, caller, "restart", next)
	if r.code != 0 {
		t.Fatalf("restart: %s", r)
	}
	third := strings.TrimSpace(r.stdout[strings.LastIndex(r.stdout, " ")+1:])
	if out := d.probeLog(third); !strings.Contains(out, "secret="+hashOf(other)) {
		t.Errorf("sessionctl restart did not run with the restarting shell's environment:\n%s", out)
	}
	d.mustCtl("stop", third)

	// --no-inherit-env: a clean environment, and nothing kept.
	clean := start("--no-inherit-env", dir, "--", "sh", "./probe.sh")
	out = d.probeLog(clean)
	if !strings.Contains(out, "secret="+hashOf("")) || !strings.Contains(out, "path=/usr/local/bin:/usr/bin:/bin\n") &&
		!strings.Contains(out, "path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n") {
		t.Errorf("--no-inherit-env gave the caller's environment:\n%s", out)
	}
	// The file may be there, empty: made with the session's directory.
	if data, err := os.ReadFile(filepath.Join(state, "sessions", clean, "environ")); err == nil && len(data) > 0 {
		t.Errorf("a session with a clean environment kept an environment: %d bytes", len(data))
	}
	if !strings.Contains(d.mustCtl("inspect", clean), `"inherit_env": false`) {
		t.Error("inspect does not show inherit_env = false")
	}
	d.mustCtl("stop", clean)
}

// TestEachUserGetsTheirOwnEnvironment runs a root daemon: a user's
// session runs with that user's environment, never root's or the
// daemon's, and what is kept of it is the user's own file.
func TestEachUserGetsTheirOwnEnvironment(t *testing.T) {
	u := newUser(t)
	sockDir, err := os.MkdirTemp("", "sdr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	if err := os.Chmod(sockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state")
	d := startBuild(t, sessiondBin, []string{"DAEMON_ONLY=root-secret-value"}, state, filepath.Join(sockDir, "s.sock"),
		fmt.Sprintf("allowed_groups = [%q]\n[defaults]\ncheckpoint = \"\"\n", u.group))
	dir := u.project(t)
	script(t, dir, "probe.sh", envProbe)
	if err := os.Chown(filepath.Join(dir, "probe.sh"), u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
	secret := fmt.Sprintf("user-secret-%d", rand.Int64())
	r := u.ctlEnv(t, d.sock, []string{"CALLER_SECRET=" + secret}, "start", "-q", dir, "--", "sh", "./probe.sh")
	if r.code != 0 {
		t.Fatalf("start: %s", r)
	}
	id := strings.TrimSpace(r.stdout)
	out := d.probeLog(id)
	if !strings.Contains(out, "secret="+hashOf(secret)) || !strings.Contains(out, "daemon=unset") {
		t.Errorf("the user's session did not get the user's environment alone:\n%s", out)
	}
	environ := filepath.Join(state, "sessions", id, "environ")
	var st syscall.Stat_t
	if err := syscall.Stat(environ, &st); err != nil || st.Uid != uint32(u.uid) || st.Mode&0o777 != 0o600 {
		t.Errorf("%s: uid %d mode %o (%v), want the user's own 0600", environ, st.Uid, st.Mode&0o777, err)
	}
	d.mustCtl("stop", id)
	// A start with no environment of its own (the API without "environ")
	// gets the clean one, never the root daemon's.
	r = u.ctl(t, d.sock, "start", "-q", "--no-inherit-env", dir, "--", "sh", "./probe.sh")
	if r.code != 0 {
		t.Fatalf("start: %s", r)
	}
	// The user's: PATH without root's sbins, the account's login shell.
	if out := d.probeLog(strings.TrimSpace(r.stdout)); !strings.Contains(out, "daemon=unset") || !strings.Contains(out, "secret="+hashOf("")) ||
		!strings.Contains(out, "path=/usr/local/bin:/usr/bin:/bin\n") || !strings.Contains(out, "shell=/bin/sh user="+u.name+"\n") {
		t.Errorf("a clean environment under a root daemon:\n%s", out)
	}
	d.mustCtl("stop", "--all")
}
