package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessiond/sessiond/daemon/proc"
)

// evilRepo is a repository whose config names programs in every place git
// would run one from: fsmonitor, a filter driver (clean, smudge and the
// long-running process, required), a diff driver's textconv and command,
// an external diff, a pager, an editor, hooks, gpg for signing. Each program
// leaves a marker file; nothing of sessiond's may make one.
func evilRepo(t *testing.T) (dir, markers string) {
	t.Helper()
	dir = newRepo(t)
	markers = t.TempDir()
	prog := func(name string) string {
		p := filepath.Join(markers, name+".sh")
		script := fmt.Sprintf("#!/bin/sh\ntouch %q\ncat\n", filepath.Join(markers, "RAN-"+name))
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write(t, dir, ".gitattributes", "*.txt filter=evil diff=evil\n*.dat filter=globalevil\n")
	write(t, dir, "secret.txt", "the real content\n")
	write(t, dir, "data.dat", "global filter content\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "attributes")
	config := map[string]string{
		"core.fsmonitor":            prog("fsmonitor"),
		"filter.evil.clean":         prog("clean") + " %f",
		"filter.evil.smudge":        prog("smudge") + " %f",
		"filter.evil.process":       prog("process"),
		"filter.evil.required":      "true",
		"diff.evil.textconv":        prog("textconv"),
		"diff.evil.command":         prog("diffcommand"),
		"diff.external":             prog("external"),
		"core.pager":                prog("pager"),
		"core.editor":               prog("editor"),
		"commit.gpgSign":            "true",
		"gpg.program":               prog("gpg"),
		"log.showSignature":         "true",
		"core.hooksPath":            filepath.Join(markers, "hooks"),
		"core.sshCommand":           prog("ssh"),
		"credential.helper":         prog("credential"),
		"core.alternateRefsCommand": prog("alternaterefs"),
	}
	for k, v := range config {
		gitT(t, dir, "config", k, v)
	}
	// The user's global config defines a driver too (as git-lfs does).
	home := t.TempDir()
	t.Setenv("HOME", home)
	write(t, home, ".gitconfig", fmt.Sprintf("[init]\n\tdefaultBranch = main\n[filter \"globalevil\"]\n\tclean = %s\n\tsmudge = %s\n\trequired = true\n",
		prog("globalclean"), prog("globalsmudge")))
	hooks := filepath.Join(markers, "hooks")
	must(t, os.Mkdir(hooks, 0o755))
	for _, h := range []string{"pre-commit", "post-commit", "reference-transaction", "post-checkout", "post-index-change", "pre-auto-gc"} {
		prog("hook-" + h)
		must(t, os.Symlink(filepath.Join(markers, "hook-"+h+".sh"), filepath.Join(hooks, h)))
	}
	return dir, markers
}

func ran(t *testing.T, markers string) []string {
	t.Helper()
	ents, err := os.ReadDir(markers)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "RAN-") {
			out = append(out, strings.TrimPrefix(e.Name(), "RAN-"))
		}
	}
	return out
}

// No git command of sessiond runs a program that the repository's or the
// user's config names, and an empty filter command really means no filter:
// the checkpoint stores the file as it is in the work tree, and a restore
// writes it back as stored.
func TestGitRunsNothingOfTheUsers(t *testing.T) {
	dir, markers := evilRepo(t)
	ctx := ctxT(t)
	c := newCheckpointer(t)
	write(t, dir, "secret.txt", "the real content, changed\n")
	write(t, dir, "data.dat", "global filter content, changed\n")
	write(t, dir, "new.txt", "new\n")
	first, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if got := blob(t, dir, first.Tree, "secret.txt"); got != "the real content, changed" {
		t.Errorf("secret.txt in the checkpoint = %q, want the work tree's bytes", got)
	}
	if got := blob(t, dir, first.Tree, "data.dat"); got != "global filter content, changed" {
		t.Errorf("data.dat in the checkpoint = %q", got)
	}
	write(t, dir, "secret.txt", "third\n")
	inc, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Changes: &Changes{Base: first.Tree, Paths: []string{"secret.txt"}, Complete: true}})
	if err != nil {
		t.Fatal(err)
	}
	if !inc.Incremental || blob(t, dir, inc.Tree, "secret.txt") != "third" {
		t.Errorf("incremental checkpoint = %+v", inc)
	}
	if _, err := c.List(ctx, ListRequest{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Restore(ctx, RestoreRequest{Dir: dir, Checkpoint: first.ID}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, dir, "secret.txt"); got != "the real content, changed\n" {
		t.Errorf("restored secret.txt = %q", got)
	}
	if _, err := c.Stats(ctx, StatsRequest{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Prune(ctx, PruneRequest{Dir: dir, Keep: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := Facts(ctx, FactsRequest{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	RecentLog(ctx, LogRequest{Dir: dir})
	write(t, dir, "secret.txt", "committed in mode commit\n")
	res, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Mode: ModeCommit, Message: "wip"})
	if err != nil {
		t.Fatal(err)
	}
	if got := blob(t, dir, res.ID, "secret.txt"); got != "committed in mode commit" {
		t.Errorf("secret.txt committed = %q", got)
	}
	if sig := gitT(t, dir, "cat-file", "-p", res.ID); strings.Contains(sig, "gpgsig") {
		t.Error("mode commit signed its commit")
	}
	if got := ran(t, markers); len(got) > 0 {
		t.Errorf("programs of the user's config ran: %v", got)
	}
	// The markers work: git run by hand does run them.
	gitE(dir, nil, "status")
	if got := ran(t, markers); len(got) == 0 {
		t.Error("plain git ran none of the programs: the test shows nothing")
	}
}

// testUser is a throwaway user made for a test.
type testUser struct {
	name     string
	uid, gid uint32
	home     string
}

func (u testUser) cred() *Credential {
	return &Credential{UID: int(u.uid), GID: int(u.gid), Home: u.home}
}

// newUser makes a user for the test and removes it afterwards, or skips
// the test when the process may not (not root): the credential tests need a
// second user, which only root can make and run processes as.
func newUser(t *testing.T) testUser {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a user and run git as it")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skip("useradd not found")
	}
	name := fmt.Sprintf("sdck%d", time.Now().UnixNano()%1000000000)
	home := filepath.Join(reachableDir(t), "home")
	out, err := exec.Command("useradd", "-M", "-N", "-d", home, "-s", "/bin/sh", name).CombinedOutput()
	if err != nil {
		t.Fatalf("useradd: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("userdel", name).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v: %s", name, err, out)
		}
	})
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	tu := testUser{name: name, uid: uint32(uid), gid: uint32(gid), home: home}
	must(t, os.Mkdir(home, 0o700))
	must(t, os.Chown(home, int(uid), int(gid)))
	tu.run(t, home, "git", "config", "--global", "init.defaultBranch", "main")
	return tu
}

// stickyDir is a temporary directory every user may write in, sticky as
// /tmp is.
func stickyDir(t *testing.T) string {
	t.Helper()
	dir := reachableDir(t)
	must(t, os.Chmod(dir, 0o777|os.ModeSticky))
	return dir
}

// reachableDir is a temporary directory that every user may enter.
func reachableDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o011 != 0o011 {
			must(t, os.Chmod(d, fi.Mode().Perm()|0o011))
		}
	}
	return dir
}

// run runs a command as the user.
func (u testUser) run(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + u.home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=U", "GIT_AUTHOR_EMAIL=u@example.com", "GIT_COMMITTER_NAME=U", "GIT_COMMITTER_EMAIL=u@example.com"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.uid, Gid: u.gid}}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := proc.Run(cmd); err != nil {
		t.Fatalf("%s %v as %s: %v: %s", name, args, u.name, err, out.String())
	}
	return strings.TrimSpace(out.String())
}

// A root daemon checkpoints a user's repository as the user: git's
// ownership check passes without safe.directory, and what git writes
// belongs to the user. The same call as root fails with git's dubious
// ownership error, which shows the check is real.
func TestCredentialRunsGitAsTheUser(t *testing.T) {
	u := newUser(t)
	t.Setenv("TMPDIR", stickyDir(t))
	ctx := ctxT(t)
	dir := filepath.Join(reachableDir(t), "repo")
	must(t, os.Mkdir(dir, 0o755))
	must(t, os.Chown(dir, int(u.uid), int(u.gid)))
	u.run(t, dir, "git", "init", "-q")
	u.run(t, dir, "sh", "-c", "echo hello > a.txt && git add a.txt && git commit -q -m first && echo more > b.txt")
	c := New(Options{StateDir: t.TempDir()})

	_, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s"})
	if err == nil || !strings.Contains(err.Error(), "dubious ownership") {
		t.Fatalf("Take as root = %v, want git's dubious ownership error", err)
	}
	res, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Credential: u.cred()})
	if err != nil {
		t.Fatalf("Take as %s: %v", u.name, err)
	}
	obj := filepath.Join(dir, ".git", "objects", res.ID[:2], res.ID[2:])
	fi, err := os.Stat(obj)
	if err != nil {
		t.Fatalf("the checkpoint's commit object: %v", err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != u.uid {
		t.Errorf("commit object owned by uid %d, want %d", st.Uid, u.uid)
	}
	for _, p := range []string{".git/" + RefPrefix + "s", ".git/logs/" + RefPrefix + "s"} {
		if fi, err := os.Stat(filepath.Join(dir, p)); err != nil || fi.Sys().(*syscall.Stat_t).Uid != u.uid {
			t.Errorf("%s: %v, want it owned by the user", p, err)
		}
	}
	if got := u.run(t, dir, "sh", "-c", "git config --get-all safe.directory || true"); got != "" {
		t.Errorf("safe.directory set to %q", got)
	}
	// Incremental, list, restore: as the user too.
	must(t, os.WriteFile(filepath.Join(dir, "b.txt"), []byte("changed\n"), 0o644))
	must(t, os.Chown(filepath.Join(dir, "b.txt"), int(u.uid), int(u.gid)))
	inc, err := c.Take(ctx, TakeRequest{Dir: dir, SessionID: "s", Credential: u.cred(), Changes: &Changes{Base: res.Tree, Paths: []string{"b.txt"}, Complete: true}})
	if err != nil || !inc.Incremental {
		t.Fatalf("incremental Take as the user = %+v, %v", inc, err)
	}
	cps, err := c.List(ctx, ListRequest{Dir: dir, Credential: u.cred()})
	if err != nil || len(cps) != 2 {
		t.Fatalf("List as the user = %d checkpoints, %v", len(cps), err)
	}
	if _, _, err := c.Restore(ctx, RestoreRequest{Dir: dir, Checkpoint: res.ID, Credential: u.cred()}); err != nil {
		t.Fatalf("Restore as the user: %v", err)
	}
	if got := read(t, dir, "b.txt"); got != "more\n" {
		t.Errorf("b.txt after restore = %q", got)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "b.txt")); fi.Sys().(*syscall.Stat_t).Uid != u.uid {
		t.Error("the restored file is not the user's")
	}
	if _, err := Facts(ctx, FactsRequest{Dir: dir, Credential: u.cred()}); err != nil {
		t.Errorf("Facts as the user: %v", err)
	}
	// A file the user cannot read is refused on the daemon's side too.
	if _, _, err := openUserFile(u.cred(), "/etc/shadow"); !errors.Is(err, os.ErrPermission) {
		t.Errorf("openUserFile(/etc/shadow) as the user = %v, want a permission error", err)
	}
}

// A non-git project of a user gets its shadow repository where the call
// says, owned by the user.
func TestShadowRootPerCall(t *testing.T) {
	u := newUser(t)
	t.Setenv("TMPDIR", stickyDir(t))
	ctx := ctxT(t)
	project := filepath.Join(reachableDir(t), "plain")
	must(t, os.Mkdir(project, 0o755))
	must(t, os.Chown(project, int(u.uid), int(u.gid)))
	u.run(t, project, "sh", "-c", "echo a > a.txt")
	// Where a root daemon puts it (session.GitAccess): in the user's home.
	root := filepath.Join(u.home, ".local", "state", "sessiond", "shadow")
	c := New(Options{StateDir: t.TempDir()})
	res, err := c.Take(ctx, TakeRequest{Dir: project, SessionID: "s", ShadowRoot: root, Credential: u.cred()})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := ProjectID(project)
	shadow := ShadowPath(root, id)
	for _, p := range []string{root, shadow, filepath.Join(shadow, "objects"), filepath.Join(shadow, "index"), filepath.Join(shadow, "info", "exclude")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != u.uid {
			t.Errorf("%s owned by uid %d, want the user's %d", p, st.Uid, u.uid)
		}
	}
	if files := u.run(t, shadow, "git", "ls-tree", "-r", "--name-only", res.Tree); files != "a.txt" {
		t.Errorf("checkpoint files %q, want a.txt", files)
	}
	if exists(c.opt.StateDir, "shadow") {
		t.Error("a shadow repository was made under the state dir as well")
	}
	cps, err := c.List(ctx, ListRequest{Dir: project, ShadowRoot: root, Credential: u.cred()})
	if err != nil || len(cps) != 1 {
		t.Errorf("List = %v, %v", cps, err)
	}
}

// A root daemon makes the shadow repository of a user's non-git project
// as the user: a home whose ~/.local/state is a symlink to a directory of
// root's gets nothing made there, and nothing in it given to the user.
func TestShadowRootThroughASymlinkIsTheUsers(t *testing.T) {
	u := newUser(t)
	t.Setenv("TMPDIR", stickyDir(t))
	project := filepath.Join(reachableDir(t), "plain")
	must(t, os.Mkdir(project, 0o755))
	must(t, os.Chown(project, int(u.uid), int(u.gid)))
	u.run(t, project, "sh", "-c", "echo a > a.txt")
	roots := reachableDir(t) // root's, 0755
	u.run(t, u.home, "sh", "-c", "mkdir -p .local && ln -s "+roots+" .local/state")
	c := New(Options{StateDir: t.TempDir()})
	_, err := c.Take(ctxT(t), TakeRequest{Dir: project, SessionID: "s", Credential: u.cred(),
		ShadowRoot: filepath.Join(u.home, ".local", "state", "sessiond", "shadow")})
	if err == nil || !errors.Is(err, os.ErrPermission) {
		t.Errorf("Take through a symlink to root's directory = %v, want a permission error", err)
	}
	if entries, _ := os.ReadDir(roots); len(entries) != 0 {
		t.Errorf("root's directory got %v", entries)
	}
}

// The temporary files a checkpoint writes for git are made as the user:
// a directory on their way swapped for a symlink to root's leads nowhere,
// and a symlink in a new file's place is not followed.
func TestTemporaryFilesAreTheUsers(t *testing.T) {
	u := newUser(t)
	tmp := filepath.Join(stickyDir(t), "sessiond-index-1")
	must(t, os.Mkdir(tmp, 0o700))
	must(t, os.Chown(tmp, int(u.uid), int(u.gid)))
	roots := reachableDir(t)
	must(t, os.Symlink(roots, filepath.Join(tmp, "info")))
	if err := writePrivateFile(u.cred(), filepath.Join(tmp, "info", "exclude"), []byte("x\n"), time.Time{}); !errors.Is(err, os.ErrPermission) {
		t.Errorf("writePrivateFile through a symlink to root's directory = %v, want a permission error", err)
	}
	if entries, _ := os.ReadDir(roots); len(entries) != 0 {
		t.Errorf("root's directory got %v", entries)
	}
	target := filepath.Join(roots, "target")
	must(t, os.WriteFile(target, []byte("root's\n"), 0o644))
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	must(t, os.Symlink(target, filepath.Join(tmp, "index")))
	if err := writePrivateFile(u.cred(), filepath.Join(tmp, "index"), []byte("x"), old); err == nil {
		t.Error("writePrivateFile over a symlink succeeded")
	}
	if fi, err := os.Stat(target); err != nil || fi.ModTime().Equal(old) || read(t, roots, "target") != "root's\n" {
		t.Errorf("the symlink's target: %v, %v; want it untouched", fi, err)
	}
	// What it makes is the user's, with the mtime asked, to the nanosecond.
	want := time.Date(2020, 2, 3, 4, 5, 6, 789, time.UTC)
	file := filepath.Join(tmp, "made")
	must(t, writePrivateFile(u.cred(), file, []byte("x"), want))
	fi, err := os.Lstat(file)
	if err != nil || fi.Sys().(*syscall.Stat_t).Uid != u.uid || !fi.ModTime().Equal(want) || fi.Mode().Perm() != 0o600 {
		t.Errorf("the file made: %v, %v; want the user's, 0600, mtime %v", fi, err, want)
	}
}

// A restore removes, as the user, only what the user could: a sticky
// directory's entries of others stay, wherever the project top points by
// the time the removal runs.
func TestRestoreRemovesOnlyWhatTheUserCould(t *testing.T) {
	u := newUser(t)
	sticky := stickyDir(t)
	victim := filepath.Join(sticky, "victim")
	must(t, os.WriteFile(victim, []byte("another's\n"), 0o644))
	mine := filepath.Join(sticky, "mine")
	must(t, os.WriteFile(mine, []byte("the user's\n"), 0o644))
	must(t, os.Chown(mine, int(u.uid), int(u.gid)))
	err := asUser(u.cred(), func() error { return removeEntries(sticky, []string{"mine", "victim"}, ".") })
	if err == nil || !errors.Is(err, syscall.EPERM) {
		t.Errorf("removing another's file in a sticky directory as the user = %v, want EPERM", err)
	}
	if !exists(sticky, "victim") {
		t.Error("another's file in a sticky directory was removed")
	}
	if exists(sticky, "mine") {
		t.Error("the user's own file was not removed")
	}
}
