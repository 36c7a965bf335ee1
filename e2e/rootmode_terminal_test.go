package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A root daemon runs a user's terminal session as that user: the command
// on the terminal has the user's ids and owns its terminal; the user can
// see, type into and attach to it, and another user can do none of it.
func TestRootDaemonTerminalAsTheUser(t *testing.T) {
	u := newUser(t)
	other := newUser(t)
	d := rootDaemon(t, u)
	dir := u.project(t)
	r := u.ctl(t, d.sock, "start", "-q", "--tty", "--stop-grace", "1s", "--env", "PS1=u$ ", dir, "--", "bash", "--norc", "--noprofile", "-i")
	if r.code != 0 {
		t.Fatalf("start as the user:\n%s", r)
	}
	id := strings.TrimSpace(r.stdout)
	d.waitScreen(id, "u$")
	if r := u.ctl(t, d.sock, "send", id, `echo "ids=$(id -u):$(id -g) tty-owner=$(stat -c %u $(tty))"`, "--enter"); r.code != 0 {
		t.Fatalf("send as the user:\n%s", r)
	}
	want := "ids=" + strconv.Itoa(u.uid) + ":" + strconv.Itoa(u.gid) + " tty-owner=" + strconv.Itoa(u.uid)
	d.waitScreen(id, want)
	if r := u.ctl(t, d.sock, "screen", id); r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Fatalf("screen as the user:\n%s", r)
	}

	// The holder is root's, and its socket is closed to the user: the
	// user reaches the terminal only through the daemon.
	holder := d.holderPID(id)
	if st, err := os.Stat("/proc/" + strconv.Itoa(holder)); err != nil || st.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Fatalf("holder %d: %v", holder, err)
	}
	sockPath := filepath.Join(d.stateDir, "sessions", id, "term.sock")
	if m := perm(t, sockPath); m != 0o600 {
		t.Errorf("holder socket mode %o, want 600", m)
	}

	// Another user of the allowed group sees nothing of it.
	for _, args := range [][]string{{"screen", id}, {"send", id, "exit"}, {"attach", id}} {
		if r := other.ctl(t, d.sock, args...); r.code == 0 {
			t.Errorf("another user's %s succeeded:\n%s", args[0], r)
		}
	}
	// The user's own attach, with no terminal of its own, is a viewer
	// that sees the command end.
	done := make(chan result, 1)
	go func() { done <- u.ctl(t, d.sock, "attach", "--read-only", id) }()
	waitFor(t, 10*time.Second, "the user's viewer", func() (bool, string) {
		return strings.Contains(d.mustCtl("inspect", id), `"tty": true`) && viewers(t, d, id) == 1, ""
	})
	u.ctl(t, d.sock, "send", id, "exit 3", "--enter")
	r = <-done
	if r.code != 0 || !strings.Contains(r.stderr, "ended: exit code 3") {
		t.Errorf("the user's attach:\n%s", r)
	}
	rec := d.waitEnded(id, 20*time.Second)
	if rec.ExitCode == nil || *rec.ExitCode != 3 {
		t.Fatalf("exit %v, want 3", rec.ExitCode)
	}
}

// viewers counts the viewers attached to a session's terminal.
func viewers(t *testing.T, d *daemon, id string) int {
	t.Helper()
	c, _, code, status := rawAttach(t, d.sock, id, true)
	if code != 101 {
		return -1
	}
	c.Close()
	// The count includes the connection that asked.
	i := strings.Index(status, `"viewers":`)
	if i < 0 {
		return -1
	}
	n, _ := strconv.Atoi(strings.TrimRight(strings.SplitN(status[i+len(`"viewers":`):], ",", 2)[0], "}"))
	return n - 1
}
