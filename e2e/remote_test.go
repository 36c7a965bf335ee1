package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sshHost is a real OpenSSH server on a port of this machine, with a
// throwaway host key, user and client key, in front of a root daemon that
// lets the user in (allowed_groups): what sessionctl --host ssh:// reaches.
type sshHost struct {
	u        tuser
	d        *daemon
	url      string
	env      []string
	sshd     *exec.Cmd
	sshdDone chan struct{}
}

func startSSHHost(t *testing.T) *sshHost {
	t.Helper()
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		if _, err = os.Stat("/usr/sbin/sshd"); err != nil {
			t.Fatal("sshd is needed for the remote tests (apt-get install openssh-server; .ci/run installs it)")
		}
		sshd = "/usr/sbin/sshd"
	}
	u := newUser(t)
	// A locked account may not log in over SSH; a key only may.
	if out, err := exec.Command("usermod", "-p", "*", u.name).CombinedOutput(); err != nil {
		t.Fatalf("usermod: %v\n%s", err, out)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for p := filepath.Dir(dir); p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		_ = os.Chmod(p, 0o755)
	}
	hostKey, clientKey := filepath.Join(dir, "host_ed25519"), filepath.Join(dir, "client_ed25519")
	for _, k := range []string{hostKey, clientKey} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", k).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
	}
	pub, err := os.ReadFile(clientKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, pub, 0o644); err != nil {
		t.Fatal(err)
	}
	// sessionctl where the user may run it.
	bin := filepath.Join(dir, "sessionctl")
	data, err := os.ReadFile(sessionctlBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "sdssh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	if err := os.Chmod(sockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), filepath.Join(sockDir, "s.sock"),
		fmt.Sprintf("allowed_groups = [%q]\n[defaults]\ncheckpoint = \"\"\n", u.group))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	conf := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
AllowUsers %s
`, port, hostKey, authorized, u.name)), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.MkdirAll("/run/sshd", 0o755) // its privilege separation directory
	h := &sshHost{u: u, d: d, sshdDone: make(chan struct{}),
		url: fmt.Sprintf("ssh://%s@127.0.0.1:%d%s?sessionctl=%s", u.name, port, d.sock, bin),
		env: []string{"SESSIOND_SSH_COMMAND=ssh -i " + clientKey + " -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes"},
	}
	h.sshd = exec.Command(sshd, "-D", "-e", "-f", conf)
	log := filepath.Join(dir, "sshd.log")
	lf, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	h.sshd.Stdout, h.sshd.Stderr = lf, lf
	if err := h.sshd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = h.sshd.Wait(); lf.Close(); close(h.sshdDone) }()
	t.Cleanup(func() {
		h.stop()
		if t.Failed() {
			b, _ := os.ReadFile(log)
			t.Logf("sshd log:\n%s", b)
		}
	})
	waitFor(t, 10*time.Second, "sshd to listen", func() (bool, string) {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, ""
	})
	return h
}

func (h *sshHost) stop() {
	if h.sshd.Process != nil {
		_ = h.sshd.Process.Kill()
	}
	<-h.sshdDone
}

// ctl runs this machine's sessionctl (as root) against the host.
func (h *sshHost) ctl(t *testing.T, args ...string) result {
	t.Helper()
	return execute(t, append(cleanEnv(), h.env...), sessionctlBin, append([]string{"--host", h.url}, args...)...)
}

// TestRemoteOverSSH: sessionctl --host ssh://user@localhost, through a real
// OpenSSH server, behaves as it does on the host itself: ps, start, logs
// -f, stop, with the same output and exit codes; the daemon there sees the
// SSH user as its caller. A stopped sshd is one line, within the timeout.
func TestRemoteOverSSH(t *testing.T) {
	h := startSSHHost(t)
	dir := h.u.project(t)

	r := h.ctl(t, "ps")
	if r.code != 0 || !strings.Contains(r.stdout, "no live sessions") && !strings.Contains(r.stdout, "ID") {
		t.Fatalf("ps over SSH: %s", r)
	}
	r = h.ctl(t, "start", "-q", dir, "--", "sh", "-c", "for i in 1 2 3; do echo line$i; sleep 0.3; done")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || !validID(id) {
		t.Fatalf("start over SSH: %s", r)
	}
	rec := h.d.inspect(id)
	if rec.ProjectDir != dir {
		t.Errorf("the session runs in %s, want %s", rec.ProjectDir, dir)
	}
	var owner struct {
		UID int `json:"uid"`
	}
	if err := json.Unmarshal([]byte(h.d.mustCtl("inspect", id)), &owner); err != nil || owner.UID != h.u.uid {
		t.Errorf("the session belongs to uid %d, want the SSH user's %d", owner.UID, h.u.uid)
	}
	r = h.ctl(t, "logs", "-f", id)
	if r.code != 0 || r.stdout != "line1\nline2\nline3\n" {
		t.Errorf("logs -f over SSH: %s", r)
	}
	local := h.u.ctl(t, h.d.sock, "ps", "-a")
	remote := h.ctl(t, "ps", "-a")
	if remote.code != 0 || !strings.Contains(remote.stdout, id) || firstField(local.stdout) != firstField(remote.stdout) {
		t.Errorf("ps -a over SSH differs from ps on the host:\nremote: %s\nlocal: %s", remote, local)
	}
	if r := h.ctl(t, "version"); r.code != 0 || !strings.Contains(r.stdout, "host       "+h.url+"\n") || strings.Contains(r.stdout, "socket ") {
		t.Errorf("version over SSH names the host it talks to, not a socket of this one: %s", r)
	}
	if r := h.ctl(t, "ps", "--all-contexts"); r.code != 2 {
		t.Errorf("ps --all-contexts with --host: %s, want a usage error", r)
	}
	if r := h.ctl(t, "inspect", "nosuch"); r.code != 1 || !strings.Contains(r.stderr, "nosuch") {
		t.Errorf("an unknown session over SSH: %s, want exit 1 naming it", r)
	}
	if r := h.ctl(t, "start", "relative/dir", "--", "true"); r.code != 2 || !strings.Contains(r.stderr, "absolute path") {
		t.Errorf("a relative DIR over SSH: %s, want a usage error asking for an absolute path", r)
	}

	t.Logf("ps -a over SSH:\n%s", remote.stdout)

	// A connection cut while a stream runs is one line that names the
	// host, not a bare EOF.
	r = h.ctl(t, "start", "-q", dir, "--", "sh", "-c", "while :; do echo tick; sleep 0.2; done")
	long := strings.TrimSpace(r.stdout)
	if r.code != 0 {
		t.Fatalf("start over SSH: %s", r)
	}
	follow := exec.Command(sessionctlBin, "--host", h.url, "logs", "-f", long)
	follow.Env = append(cleanEnv(), h.env...)
	out, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var followErr strings.Builder
	follow.Stderr = &followErr
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 5)
	if _, err := io.ReadFull(out, first); err != nil || string(first) != "tick\n" {
		t.Fatalf("logs -f over SSH: %q, %v", first, err)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if o, err := exec.Command("pkill", "-KILL", "-u", h.u.name, "-f", "dial-stdio").CombinedOutput(); err != nil {
		t.Fatalf("pkill dial-stdio: %v\n%s", err, o)
	}
	ended := make(chan error, 1)
	go func() { ended <- follow.Wait() }()
	select {
	case err = <-ended:
	case <-time.After(15 * time.Second):
		_ = follow.Process.Kill()
		t.Fatalf("logs -f went on after its connection was cut; stderr %q", followErr.String())
	}
	msg := strings.TrimSpace(followErr.String())
	if exitCode(err) != 1 || strings.Contains(msg, "\n") || !strings.Contains(msg, "the connection to sessiond on "+h.url+" ended: ") {
		t.Errorf("logs -f over a cut connection: exit %d, stderr %q; want exit 1 and one line naming the host", exitCode(err), msg)
	}
	t.Logf("logs -f over a cut connection: %s", msg)
	h.d.mustCtl("stop", long)

	h.stop()
	started := time.Now()
	r = h.ctl(t, "ps")
	if r.code != 3 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "cannot reach sessiond on ssh://") || !strings.Contains(strings.ToLower(r.stderr), "refused") {
		t.Errorf("ps against a stopped sshd: %s, want exit 3 and one line saying the connection was refused", r)
	}
	t.Logf("ps against a stopped sshd: exit %d: %s", r.code, r.stderr)
	if took := time.Since(started); took > 12*time.Second {
		t.Errorf("ps against a stopped sshd took %s", took)
	}
}

func firstField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// TestRemoteAttachAndUI: sessionctl attach and sessionctl ui against the
// host through SSH, in tmux as a person would run them: keys reach the
// session's terminal and its screen comes back, ctrl-] detaches; the
// dashboard lists the host's sessions.
func TestRemoteAttachAndUI(t *testing.T) {
	h := startSSHHost(t)
	dir := h.u.project(t)
	r := h.ctl(t, "start", "-q", "--tty", dir, "--", "sh")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || !validID(id) {
		t.Fatalf("start --tty over SSH: %s", r)
	}
	x := newTmux(t)
	w := x.shell("attach", 100, 30)
	cmdline := fmt.Sprintf("env %q %s --host %q", h.env[0], sessionctlBin, h.url)
	x.typeLine(w, cmdline+" attach "+id)
	x.typeLine(w, "echo remote-$((40+2))")
	x.waitPane(w, "remote-42")
	x.pressUntil(w, "C-]", "[detached from "+id)
	if rec := h.d.inspect(id); rec.State != "running" {
		t.Fatalf("after the detach the session is %s", rec.State)
	}

	ui := x.shell("ui", 120, 30)
	x.typeLine(ui, cmdline+" ui; echo ui exited $?")
	x.waitPane(ui, id, "running")
	x.run("send-keys", "-t", ui, "q")
	x.waitPane(ui, "ui exited 0")
	h.ctl(t, "stop", id)
}

// TestRemoteContexts: named contexts (add, ls with the current one marked,
// use, rm) kept in the user's config dir; ps --all-contexts lists every
// host's sessions with a HOST column, and a host that is down is one line
// within --host-timeout, the others listed all the same.
func TestRemoteContexts(t *testing.T) {
	h := startSSHHost(t)
	cfg := t.TempDir()
	env := append([]string{"XDG_CONFIG_HOME=" + cfg}, h.env...)
	local := startDaemon(t)
	lctl := func(args ...string) result {
		return execute(t, append(cleanEnv(), env...), sessionctlBin, append([]string{"--socket", local.sock}, args...)...)
	}
	if r := lctl("context", "add", "build", h.url, "--description", "the build host"); r.code != 0 {
		t.Fatalf("context add: %s", r)
	}
	if r := lctl("context", "add", "down", "ssh://nobody@127.0.0.1:1"); r.code != 0 {
		t.Fatalf("context add: %s", r)
	}
	if r := lctl("context", "add", "bad", "tcp://x:1"); r.code != 2 {
		t.Errorf("a context of a host that is not ssh://: %s, want exit 2", r)
	}
	st, err := os.Stat(filepath.Join(cfg, "sessiond", "contexts.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the contexts file: %v, mode %v, want 0600", err, st.Mode())
	}
	// Its host given again: what it is stays said.
	if r := lctl("context", "add", "build", h.url); r.code != 0 {
		t.Fatalf("context add of a context there is: %s", r)
	}
	ls := lctl("context", "ls")
	if !strings.Contains(ls.stdout, "default *") || !strings.Contains(ls.stdout, "build") || !strings.Contains(ls.stdout, "the build host") {
		t.Errorf("context ls:\n%s", ls)
	}

	dir := h.u.project(t)
	remoteID := strings.TrimSpace(lctl("--context", "build", "start", "-q", dir, "--", "sleep", "60").stdout)
	if !validID(remoteID) {
		t.Fatalf("start --context build: %q", remoteID)
	}
	localID := local.start(project(t), "--", "sleep", "60")

	// use: the current context is the build host's, without --context.
	if r := lctl("context", "use", "build"); r.code != 0 {
		t.Fatal(r)
	}
	if r := execute(t, append(cleanEnv(), env...), sessionctlBin, "ps", "-q"); !strings.Contains(r.stdout, remoteID) {
		t.Errorf("ps in the current context build: %s, want %s", r, remoteID)
	}
	if ls := lctl("context", "ls"); !strings.Contains(ls.stdout, "build *") {
		t.Errorf("context ls after use:\n%s", ls.stdout)
	}
	// A session's own commands (its agent's hooks) are given
	// SESSIOND_SOCKET: they reach this host's daemon whatever the current
	// context.
	inSession := execute(t, append(cleanEnv(), append(env, "SESSIOND_SOCKET="+local.sock)...), sessionctlBin, "ps", "-q")
	if !strings.Contains(inSession.stdout, localID) || strings.Contains(inSession.stdout, remoteID) {
		t.Errorf("ps with SESSIOND_SOCKET in the current context build: %s, want this host's %s", inSession, localID)
	}
	lctl("context", "use", "default")

	started := time.Now()
	r := lctl("ps", "--all-contexts", "--host-timeout", "5s")
	took := time.Since(started)
	if r.code != 1 || !strings.Contains(r.stdout, "HOST") || !strings.Contains(r.stdout, remoteID) || !strings.Contains(r.stdout, localID) {
		t.Errorf("ps --all-contexts: %s", r)
	}
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "sessionctl: down: ") {
		t.Errorf("ps --all-contexts with one host down: stderr %q, want one line for it", r.stderr)
	}
	if took > 8*time.Second {
		t.Errorf("ps --all-contexts took %s with --host-timeout 5s", took)
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.Contains(line, remoteID) && !strings.HasPrefix(line, "build ") || strings.Contains(line, localID) && !strings.HasPrefix(line, "default ") {
			t.Errorf("a row without its host: %q", line)
		}
	}
	if r := lctl("ps", "--context", "default,build", "--filter", "name=no-such-name"); r.code != 0 || !strings.HasPrefix(r.stdout, "HOST ") {
		t.Errorf("ps of two hosts with no row: %s, want its HOST column all the same", r)
	}
	if r := lctl("ps", "--context", "default,build", "-q"); r.code != 0 || !strings.Contains(r.stdout, "build\t"+remoteID) {
		t.Errorf("ps --context default,build: %s", r)
	}
	ev := lctl("events", "--context", "default,build")
	if ev.code != 0 || !strings.Contains(ev.stdout, "build  ") || !strings.Contains(ev.stdout, remoteID) || !strings.Contains(ev.stdout, localID) {
		t.Errorf("events of two hosts: %s", ev)
	}
	// rm removes what it can: an unknown name, or default, is a line on
	// stderr and exit 1, and the other named is removed all the same.
	if r := lctl("context", "rm", "down", "nosuch", "default"); r.code != 1 || r.stdout != "down\n" ||
		!strings.Contains(r.stderr, `no context "nosuch"`) || !strings.Contains(r.stderr, `"default" is this host's own daemon`) {
		t.Errorf("context rm of one there is, one there is not and default: %s", r)
	}
	if ls := lctl("context", "ls"); strings.Contains(ls.stdout, "down") {
		t.Errorf("context down is still listed after its rm:\n%s", ls.stdout)
	}
	// A host that drops the connection rather than refuse it: bounded by
	// --host-timeout all the same.
	lctl("context", "add", "blackhole", "ssh://nobody@10.255.255.1")
	started = time.Now()
	r = lctl("ps", "--context", "default,blackhole", "--host-timeout", "2s")
	if took := time.Since(started); took > 5*time.Second || r.code != 1 || !strings.Contains(r.stdout, localID) || !strings.Contains(r.stderr, "blackhole: ") {
		t.Errorf("ps with a host that does not answer took %s: %s", took, r)
	}
	lctl("--context", "build", "stop", remoteID)
}

// TestRemoteUIAllContexts: sessionctl ui --all-contexts lists every
// host's sessions in one list with their HOST, says in its header which
// host is down (and retries it), and an action on a session goes to its
// host.
func TestRemoteUIAllContexts(t *testing.T) {
	h := startSSHHost(t)
	local := startDaemon(t)
	cfg := t.TempDir()
	env := append([]string{"XDG_CONFIG_HOME=" + cfg}, h.env...)
	lctl := func(args ...string) result {
		return execute(t, append(cleanEnv(), env...), sessionctlBin, append([]string{"--socket", local.sock}, args...)...)
	}
	lctl("context", "add", "build", h.url)
	lctl("context", "add", "down", "ssh://nobody@127.0.0.1:1")
	remoteID := strings.TrimSpace(lctl("--context", "build", "start", "-q", "--name", "far", h.u.project(t), "--", "sleep", "60").stdout)
	localID := local.start("--name", "near", project(t), "--", "sleep", "60")
	if !validID(remoteID) {
		t.Fatalf("start on build: %q", remoteID)
	}

	x := newTmux(t)
	w := x.shell("ui", 160, 30)
	var envs []string
	for _, e := range env {
		envs = append(envs, fmt.Sprintf("%q", e))
	}
	x.typeLine(w, fmt.Sprintf("env %s %s --socket %s ui --all-contexts; echo ui exited $?", strings.Join(envs, " "), sessionctlBin, local.sock))
	pane := x.waitPane(w, "far", "near", "HOST", "down offline, retrying")
	for _, line := range strings.Split(pane, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "─") {
			continue // the detail pane's title
		}
		if strings.Contains(line, remoteID) && !strings.Contains(line, "build") || strings.Contains(line, localID) && !strings.Contains(line, "default") {
			t.Errorf("a row without its host: %q", line)
		}
	}
	// Stop the remote one from the dashboard: the request goes to build.
	x.run("send-keys", "-t", w, "Home")
	for range 3 {
		if strings.Contains(x.pane(w), "─ far · "+remoteID) {
			break
		}
		x.run("send-keys", "-t", w, "Down")
		time.Sleep(300 * time.Millisecond)
	}
	x.waitPane(w, "─ far · "+remoteID)
	x.run("send-keys", "-t", w, "s")
	x.waitPane(w, "Stop far ("+remoteID+")?", "--context build stop "+remoteID)
	x.run("send-keys", "-t", w, "y")
	waitFor(t, 20*time.Second, "the remote session to end", func() (bool, string) {
		rec := h.d.inspect(remoteID)
		return rec.State == "ended", rec.State
	})
	if rec := local.inspect(localID); rec.State != "running" {
		t.Errorf("the local session is %s after the remote one's stop", rec.State)
	}
	x.run("send-keys", "-t", w, "q")
	x.waitPane(w, "ui exited 0")
	local.mustCtl("stop", localID)
}
