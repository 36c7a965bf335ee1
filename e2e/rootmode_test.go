package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tuser is a throwaway user (and group) that a test creates and removes.
type tuser struct {
	name, group string
	uid, gid    int
}

// newUser creates a user in a new group; both go when the test ends.
func newUser(t *testing.T) tuser {
	t.Helper()
	return newUserIn(t, "")
}

// newUserIn creates a user whose group is group, or a new one of its own
// for ""; what it creates goes when the test ends.
func newUserIn(t *testing.T, group string) tuser {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("root mode is tested as root, with throwaway users (the tests run as root here and in CI)")
	}
	u := tuser{name: fmt.Sprintf("sdt%06d", rand.IntN(1e6)), group: group}
	cmds := [][]string{{"useradd", "-M", "-N", "-g", group, "-s", "/bin/sh", "-d", "/nonexistent", u.name}}
	if group == "" {
		u.group = u.name
		cmds = [][]string{{"groupadd", u.group}, {"useradd", "-M", "-N", "-g", u.group, "-s", "/bin/sh", "-d", "/nonexistent", u.name}}
	}
	for _, c := range cmds {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", c, err, out)
		}
	}
	t.Cleanup(func() {
		_ = exec.Command("pkill", "-KILL", "-u", u.name).Run()
		_ = exec.Command("userdel", u.name).Run()
		if group == "" {
			_ = exec.Command("groupdel", u.group).Run()
		}
	})
	out, err := exec.Command("id", "-u", u.name).Output()
	if err != nil {
		t.Fatal(err)
	}
	u.uid, _ = strconv.Atoi(strings.TrimSpace(string(out)))
	out, _ = exec.Command("id", "-g", u.name).Output()
	u.gid, _ = strconv.Atoi(strings.TrimSpace(string(out)))
	return u
}

// ctl runs sessionctl as the user.
func (u tuser) ctl(t *testing.T, sock string, args ...string) result {
	t.Helper()
	return u.ctlEnv(t, sock, nil, args...)
}

// ctlEnv runs sessionctl as the user, with env added to its environment.
func (u tuser) ctlEnv(t *testing.T, sock string, env []string, args ...string) result {
	t.Helper()
	return u.ctlWithin(t, sock, env, 30*time.Second, args...)
}

// ctlWithin is ctlEnv for a command given up to limit (a batch of
// thousands of starts on a loaded machine).
func (u tuser) ctlWithin(t *testing.T, sock string, env []string, limit time.Duration, args ...string) result {
	t.Helper()
	cmd := exec.Command(sessionctlBin, append([]string{"--socket", sock}, args...)...)
	cmd.Env = append(append(cleanEnv(), "HOME=/tmp"), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		t.Fatalf("sessionctl %v as %s did not finish within %s", args, u.name, limit)
	}
	return result{args: append([]string{"sessionctl"}, args...), stdout: out.String(), stderr: errb.String(), code: exitCode(err)}
}

// userProject makes a project directory the user owns.
func (u tuser) project(t *testing.T) string {
	t.Helper()
	dir := project(t)
	// The test's temp dirs are root's: let the user through to its own.
	for p := filepath.Dir(dir); p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		_ = os.Chmod(p, 0o755)
	}
	if err := os.Chown(dir, u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
	return dir
}

// rootFile makes a root-only file with content, in a root-only directory.
func rootFile(t *testing.T, name, content string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// rootDaemon runs a root daemon whose socket the user's group may use.
func rootDaemon(t *testing.T, u tuser) *daemon {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "sdr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	if err := os.Chmod(sockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return startDaemonWith(t, filepath.Join(t.TempDir(), "state"), filepath.Join(sockDir, "s.sock"),
		fmt.Sprintf("allowed_groups = [%q]\n[defaults]\ncheckpoint = \"\"\n", u.group))
}

func unchanged(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Errorf("%s changed: %q, %v (want %q)", path, got, err, want)
	}
	if fi, err := os.Stat(path); err == nil && fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("%s was given away to uid %d", path, fi.Sys().(*syscall.Stat_t).Uid)
	}
}

// TestRootDaemonActsWithTheUsersRights runs, as an ordinary user of an
// allowed group against a root daemon, each attack that once made root
// write, read or chown a file for that user.
func TestRootDaemonActsWithTheUsersRights(t *testing.T) {
	u := newUser(t)
	d := rootDaemon(t, u)

	t.Run("progress_file outside the project", func(t *testing.T) {
		target := rootFile(t, "x", "root's\n")
		for _, v := range []string{target, "../../../../../../.." + target} {
			dir := u.project(t)
			if err := os.WriteFile(filepath.Join(dir, "sessiond.toml"), []byte("[session]\nprogress_file = \""+v+"\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r := u.ctl(t, d.sock, "start", dir, "--", "true")
			if r.code != 1 || !strings.Contains(r.stderr, "progress_file") {
				t.Errorf("progress_file = %q:\n%s", v, r)
			}
			unchanged(t, target, "root's\n")
		}
	})

	t.Run("root starts a session in a user's project", func(t *testing.T) {
		// What the project's files name runs as the project's owner, not
		// as root, and root's environment is not handed to it.
		dir := u.project(t)
		if err := os.WriteFile(filepath.Join(dir, "sessiond.toml"), []byte("[session]\ncommand = [\"sh\", \"-c\", \"id -u > cmd.uid; echo root-secret=$ROOT_SECRET > cmd.env\"]\npreflight = [\"id -u > pre.uid\"]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_ = os.Lchown(filepath.Join(dir, "sessiond.toml"), u.uid, u.gid)
		r := execute(t, append(cleanEnv(), "ROOT_SECRET=hunter2"), sessionctlBin, "--socket", d.sock, "start", "-q", "--wait", "--env", "GIVEN=1", dir)
		if r.code != 0 {
			t.Fatalf("root's start in the user's project: %s", r)
		}
		for _, f := range []string{"cmd.uid", "pre.uid"} {
			if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(u.uid) {
				t.Errorf("%s = %q (%v), want the user's uid %d", f, b, err, u.uid)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "cmd.env")); strings.Contains(string(b), "hunter2") {
			t.Errorf("the user's session got root's environment: %s", b)
		}
		var owner struct {
			UID int `json:"uid"`
		}
		if err := json.Unmarshal([]byte(d.mustCtl("inspect", strings.TrimSpace(r.stdout))), &owner); err != nil || owner.UID != u.uid {
			t.Errorf("the session belongs to uid %d (%v), want the user's %d", owner.UID, err, u.uid)
		}
	})

	t.Run("a socket in a directory closed to the user", func(t *testing.T) {
		// The user is in allowed_groups: what keeps them out is the
		// directory, and the message says so, not to ask for a group.
		sockDir := filepath.Dir(d.sock)
		if err := os.Chmod(sockDir, 0o700); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(sockDir, 0o755)
		if r := u.ctl(t, d.sock, "ps"); r.code == 0 || !strings.Contains(r.stderr, "is closed to this user") || strings.Contains(r.stderr, "ask for a group") {
			t.Errorf("ps through a closed directory: %s", r)
		}
	})

	t.Run("symlinks to root's files and directories", func(t *testing.T) {
		target := rootFile(t, "progress", "root's progress\n")
		rootDir := filepath.Dir(rootFile(t, "keep", "k"))
		secret := rootFile(t, "secret.json", `[{"id":1,"description":"TOPSECRET-FEATURE","passes":false}]`)
		excl := rootFile(t, "exclude", "TOPSECRET-EXCLUDE\n")
		dir := u.project(t)
		mustRun(t, "runuser", "-u", u.name, "--", "git", "init", "-q", dir)
		for _, c := range [][2]string{
			{filepath.Join(dir, ".sessiond", "progress.md"), target},
			{filepath.Join(dir, "feature_list.json"), secret},
		} {
			_ = os.MkdirAll(filepath.Dir(c[0]), 0o700)
			_ = os.Chown(filepath.Dir(c[0]), u.uid, u.gid)
			if err := os.Symlink(c[1], c[0]); err != nil {
				t.Fatal(err)
			}
			_ = os.Lchown(c[0], u.uid, u.gid)
		}
		info := filepath.Join(dir, ".git", "info")
		_ = os.RemoveAll(info)
		if err := os.Symlink(rootDir, info); err != nil {
			t.Fatal(err)
		}
		_ = os.Lchown(info, u.uid, u.gid)
		r := u.ctl(t, d.sock, "start", dir, "--", "true")
		if r.code != 0 {
			t.Fatalf("start:\n%s", r)
		}
		id := strings.Fields(r.stdout)[len(strings.Fields(r.stdout))-1]
		d.waitEnded(id, 15*time.Second)
		unchanged(t, target, "root's progress\n")
		if _, err := os.Stat(filepath.Join(rootDir, "exclude")); err == nil {
			t.Error("root wrote an exclude file into root's directory")
		}
		for _, name := range []string{"context.md", "handoff.json", "session_state.json"} {
			data, _ := os.ReadFile(filepath.Join(dir, ".sessiond", name))
			if bytes.Contains(data, []byte("TOPSECRET")) {
				t.Errorf("%s holds the content of a root-only file", name)
			}
		}
		if out := d.mustCtl("logs", id); strings.Contains(out, "TOPSECRET") {
			t.Error("the session's output holds the content of a root-only file")
		}
		// Everything sessiond wrote in the project is the user's.
		filepath.Walk(filepath.Join(dir, ".sessiond"), func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Sys().(*syscall.Stat_t).Uid != uint32(u.uid) {
				t.Errorf("%s belongs to uid %d, not the user", p, fi.Sys().(*syscall.Stat_t).Uid)
			}
			return nil
		})
		// An exclude linked to a root-only file: its content lands nowhere.
		dir2 := u.project(t)
		mustRun(t, "runuser", "-u", u.name, "--", "git", "init", "-q", dir2)
		ex := filepath.Join(dir2, ".git", "info", "exclude")
		_ = os.Remove(ex)
		if err := os.Symlink(excl, ex); err != nil {
			t.Fatal(err)
		}
		_ = os.Lchown(ex, u.uid, u.gid)
		r = u.ctl(t, d.sock, "start", dir2, "--", "true")
		if r.code != 0 {
			t.Fatalf("start with a linked exclude:\n%s", r)
		}
		id = strings.Fields(r.stdout)[len(strings.Fields(r.stdout))-1]
		d.waitEnded(id, 15*time.Second)
		unchanged(t, excl, "TOPSECRET-EXCLUDE\n")
		grep := exec.Command("grep", "-rl", "TOPSECRET-EXCLUDE", dir2)
		if out, _ := grep.Output(); len(out) > 0 {
			t.Errorf("the root-only exclude's content landed in %s", out)
		}
	})

	t.Run("a gitdir file pointing at root's directory", func(t *testing.T) {
		rootDir := filepath.Dir(rootFile(t, "HEAD", "ref: refs/heads/main\n"))
		dir := u.project(t)
		if err := os.WriteFile(filepath.Join(dir, ".git"), []byte("gitdir: "+rootDir+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_ = os.Chown(filepath.Join(dir, ".git"), u.uid, u.gid)
		r := u.ctl(t, d.sock, "start", dir, "--", "true")
		if r.code == 0 {
			id := strings.Fields(r.stdout)[len(strings.Fields(r.stdout))-1]
			d.waitEnded(id, 15*time.Second)
		}
		if _, err := os.Stat(filepath.Join(rootDir, "info", "exclude")); err == nil {
			t.Error("root wrote info/exclude into root's git directory")
		}
	})

	t.Run("a repository whose git config runs programs", func(t *testing.T) {
		dir := u.project(t)
		marker := filepath.Join(t.TempDir(), "ran")
		_ = os.Chmod(filepath.Dir(marker), 0o777)
		prog := filepath.Join(dir, "prog.sh")
		if err := os.WriteFile(prog, []byte("#!/bin/sh\nid -u >> "+marker+"\ncat\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		_ = os.Chown(prog, u.uid, u.gid)
		asUser := func(args ...string) {
			t.Helper()
			cmd := exec.Command("git", args...)
			cmd.Dir, cmd.Env = dir, append(cleanEnv(), "HOME=/tmp", "GIT_CONFIG_NOSYSTEM=1")
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v as %s: %v\n%s", args, u.name, err, out)
			}
		}
		asUser("init", "-q")
		asUser("config", "core.fsmonitor", prog)
		asUser("config", "filter.x.clean", prog)
		asUser("config", "filter.x.smudge", prog)
		asUser("config", "core.hooksPath", dir)
		if err := os.WriteFile(filepath.Join(dir, ".gitattributes"), []byte("*.txt filter=x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "work.txt"), []byte("the user's work\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{".gitattributes", "work.txt"} {
			if err := os.Lchown(filepath.Join(dir, f), u.uid, u.gid); err != nil {
				t.Fatal(err)
			}
		}
		r := u.ctl(t, d.sock, "start", dir, "--", "sleep", "30")
		if r.code != 0 {
			t.Fatalf("%v: %s", r.args, r.stderr)
		}
		id := strings.Fields(r.stdout)[len(strings.Fields(r.stdout))-1]
		if c := u.ctl(t, d.sock, "--json", "checkpoint", id); c.code != 0 {
			t.Fatalf("checkpoint as %s: %s", u.name, c.stderr)
		}
		u.ctl(t, d.sock, "stop", id)
		d.waitEnded(id, 15*time.Second)
		if b, err := os.ReadFile(marker); err == nil {
			t.Errorf("the repository's programs ran during checkpoints, as uid %s", strings.Fields(string(b)))
		}
		// The checkpoint's objects and ref are the user's, not root's.
		refs, err := filepath.Glob(filepath.Join(dir, ".git", "refs", "sessiond", "checkpoints", "*"))
		if err != nil || len(refs) == 0 {
			t.Fatalf("no checkpoint ref in the user's repository: %v", err)
		}
		_ = filepath.WalkDir(filepath.Join(dir, ".git"), func(p string, e os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if fi, err := os.Lstat(p); err == nil && fi.Sys().(*syscall.Stat_t).Uid != uint32(u.uid) {
				t.Errorf("%s is owned by uid %d, not the user", p, fi.Sys().(*syscall.Stat_t).Uid)
			}
			return nil
		})
		list := u.ctl(t, d.sock, "checkpoints", dir)
		if list.code != 0 || !strings.Contains(list.stdout, "work.txt") {
			t.Errorf("checkpoints as the user: %s%s (want the checkpoint naming work.txt)", list.stdout, list.stderr)
		}
		// Root lists, measures and restores them too, with git run as the
		// user whose project it is: no ownership check met, nothing made
		// root's.
		if list := d.ctl("checkpoints", dir); list.code != 0 || !strings.Contains(list.stdout, "work.txt") {
			t.Errorf("checkpoints as root: %s", list)
		}
		if st := d.ctl("checkpoints", "--stats", dir); st.code != 0 {
			t.Errorf("checkpoints --stats as root: %s", st)
		}
		if err := os.WriteFile(filepath.Join(dir, "work.txt"), []byte("changed since\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var cps []struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal([]byte(d.mustCtl("--json", "checkpoints", dir)), &cps); err != nil || len(cps) == 0 {
			t.Fatalf("checkpoints --json as root: %v", err)
		}
		if r := d.ctl("restore", dir, cps[len(cps)-1].ID); r.code != 0 {
			t.Errorf("restore as root: %s", r)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "work.txt")); string(b) != "the user's work\n" {
			t.Errorf("work.txt after root's restore: %q", b)
		}
		_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if fi, err := os.Lstat(p); err == nil && fi.Sys().(*syscall.Stat_t).Uid != uint32(u.uid) {
				t.Errorf("after root's checkpoints and restore, %s is owned by uid %d, not the user", p, fi.Sys().(*syscall.Stat_t).Uid)
			}
			return nil
		})
	})

	t.Run("sessiond.toml linked to a root-only file", func(t *testing.T) {
		secret := rootFile(t, "secret.toml", "[session]\ntopsecret_key_name = 1\n")
		dir := u.project(t)
		p := filepath.Join(dir, "sessiond.toml")
		if err := os.Symlink(secret, p); err != nil {
			t.Fatal(err)
		}
		_ = os.Lchown(p, u.uid, u.gid)
		r := u.ctl(t, d.sock, "start", dir, "--", "true")
		if r.code == 0 || strings.Contains(r.stderr, "topsecret") {
			t.Errorf("start with a linked sessiond.toml:\n%s", r)
		}
	})

	t.Run("FIFOs and /dev/zero as input files", func(t *testing.T) {
		for _, name := range []string{"sessiond.toml", "feature_list.json", ".sessiond/session_state.json", ".sessiond/handoff.json"} {
			for _, kind := range []string{"fifo", "zero"} {
				dir := u.project(t)
				p := filepath.Join(dir, name)
				_ = os.MkdirAll(filepath.Dir(p), 0o700)
				_ = os.Chown(filepath.Dir(p), u.uid, u.gid)
				if kind == "fifo" {
					if err := syscall.Mkfifo(p, 0o644); err != nil {
						t.Fatal(err)
					}
				} else if err := os.Symlink("/dev/zero", p); err != nil {
					t.Fatal(err)
				}
				_ = os.Lchown(p, u.uid, u.gid)
				t0 := time.Now()
				r := u.ctl(t, d.sock, "start", dir, "--", "sleep", "100")
				if time.Since(t0) > 10*time.Second {
					t.Errorf("%s as %s: start took %v", kind, name, time.Since(t0))
				}
				if r.code == 0 {
					id := strings.Fields(r.stdout)[len(strings.Fields(r.stdout))-1]
					if rs := u.ctl(t, d.sock, "stop", id); rs.code != 0 {
						t.Errorf("%s as %s: stop:\n%s", kind, name, rs)
					}
				} else if !strings.Contains(r.stderr, "not a regular file") && !strings.Contains(r.stderr, "FIFO") && !strings.Contains(r.stderr, "device") {
					t.Errorf("%s as %s: start failed without saying why:\n%s", kind, name, r)
				}
			}
		}
		if rss := daemonRSS(t, d); rss > 64<<20 {
			t.Errorf("daemon RSS %d MiB after /dev/zero inputs", rss>>20)
		}
	})

	t.Run("another user's sessions are not visible", func(t *testing.T) {
		rootID := d.start(project(t), "--", "sleep", "100")
		if r := u.ctl(t, d.sock, "inspect", rootID); r.code != 1 || !strings.Contains(r.stderr, "no session") {
			t.Errorf("the user inspected root's session:\n%s", r)
		}
		if r := u.ctl(t, d.sock, "stop", rootID); r.code != 1 {
			t.Errorf("the user stopped root's session:\n%s", r)
		}
		// Nor counted: the health the user gets counts the user's own.
		out, err := exec.Command("runuser", "-u", u.name, "--", "curl", "-s", "--unix-socket", d.sock, "http://sessiond/v1/health").Output()
		var mine, all struct{ Sessions, Live int }
		if err != nil || json.Unmarshal(out, &mine) != nil {
			t.Fatalf("GET /v1/health as the user: %v %s", err, out)
		}
		_, body := curl(t, d.sock, "GET", "/v1/health", nil)
		if err := json.Unmarshal(body, &all); err != nil {
			t.Fatal(err)
		}
		own := len(strings.Fields(u.ctl(t, d.sock, "ps", "-a", "-q").stdout))
		if mine.Sessions != own || all.Sessions <= own || mine.Live > mine.Sessions {
			t.Errorf("health as the user counts %d sessions (%d live), root's %d; want the user's own %d", mine.Sessions, mine.Live, all.Sessions, own)
		}
	})
}

func mustRun(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// daemonRSS is the daemon's resident memory in bytes.
func daemonRSS(t *testing.T, d *daemon) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb << 10
		}
	}
	return 0
}
