package state

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The attacks of a user on a root daemon, through the files of their own
// project: each test sets the trap as root, acts through a handle with the
// user's identity, and checks that root's files are untouched, their
// content never reaches the user, and nothing blocks.

// secretText is the content of root-only files; it must never show up
// anywhere the user can read, error messages included.
const secretText = "secret_key = \"hunter2\"\n"

type attack struct {
	u         *testUser
	base      string // shared, root's
	project   string // the user's
	rootDir   string // root's directory, 0755, with rootDir/keep
	rootFile, // root's file, 0644
	secret string // root's file, 0600, holding secretText
	p *Project
}

func newAttack(t *testing.T) *attack {
	t.Helper()
	u := newTestUser(t)
	base, project := userProject(t, u)
	a := &attack{u: u, base: base, project: project,
		rootDir: filepath.Join(base, "rootdir"), rootFile: filepath.Join(base, "etc-x"), secret: filepath.Join(base, "secret")}
	if err := os.Mkdir(a.rootDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(a.rootDir, "keep"), "root's\n")
	writeTestFile(t, a.rootFile, "original\n")
	if err := os.Chmod(a.rootFile, 0o644); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, a.secret, secretText)
	p, err := OpenProject(project, &u.Owner)
	if err != nil {
		t.Fatal(err)
	}
	a.p = p
	return a
}

// inProject creates path (relative to the project) as the user would.
func (a *attack) symlink(t *testing.T, target, rel string) {
	t.Helper()
	path := filepath.Join(a.project, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	chown(t, path, a.u)
}

// rootState describes root's files: path, mode, owner and content.
func (a *attack) rootState(t *testing.T) string {
	t.Helper()
	var lines []string
	for _, p := range []string{a.rootDir, a.rootFile, a.secret} {
		_ = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, _ := os.Lstat(path)
			uid, gid := owner(t, path)
			line := path + " " + fi.Mode().String() + " " + strconv.Itoa(uid) + ":" + strconv.Itoa(gid)
			if !d.IsDir() {
				data, _ := os.ReadFile(path)
				line += " " + string(data)
			}
			lines = append(lines, line)
			return nil
		})
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// assertNoLeak fails if the secret's content is in err or in any file under
// base that the user can read.
func (a *attack) assertNoLeak(t *testing.T, err error) {
	t.Helper()
	for _, word := range []string{"hunter2", "secret_key"} {
		if err != nil && strings.Contains(err.Error(), word) {
			t.Errorf("error %q holds the secret's content", err)
		}
	}
	_ = filepath.WalkDir(a.base, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		if uid, _ := owner(t, path); uid == 0 && mode(t, path)&0o044 == 0 {
			return nil // root's own, closed to the user
		}
		if data, _ := os.ReadFile(path); strings.Contains(string(data), "hunter2") {
			t.Errorf("%s holds the secret's content", path)
		}
		return nil
	})
}

// check runs op as the user and checks that it failed with want, that
// root's files did not change, and that nothing leaked.
func (a *attack) check(t *testing.T, op func() error, want error) {
	t.Helper()
	before := a.rootState(t)
	err := withinBound(t, "operation", op)
	if !errors.Is(err, want) {
		t.Errorf("got %v, want %v", err, want)
	}
	if after := a.rootState(t); after != before {
		t.Errorf("root's files changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	a.assertNoLeak(t, err)
}

func TestAttackProgressFile(t *testing.T) {
	a := newAttack(t)
	entry := ProgressEntry{Time: testNow, SessionID: "s1"}
	append := func(rel string) func() error {
		return func() error { _, err := a.p.AppendProgress(rel, entry); return err }
	}
	t.Run("absolute progress_file", func(t *testing.T) {
		if err := CheckRelativePath("progress_file", a.rootFile); err == nil || !strings.Contains(err.Error(), "progress_file") {
			t.Errorf("config check: got %v, want an error naming progress_file", err)
		}
		a.check(t, append(a.rootFile), ErrOutsideProject)
	})
	t.Run("relative progress_file climbing out", func(t *testing.T) {
		a.check(t, append("../../../../"+strings.TrimPrefix(a.rootFile, "/")), ErrOutsideProject)
	})
	t.Run("through a symlinked directory", func(t *testing.T) {
		a.symlink(t, a.base, "logs")
		a.check(t, append("logs/etc-x"), ErrOutsideProject)
	})
	t.Run(".sessiond/progress.md linked to a root file", func(t *testing.T) {
		if err := a.p.EnsureStateDir(); err != nil {
			t.Fatal(err)
		}
		a.symlink(t, a.rootFile, ".sessiond/progress.md")
		a.check(t, append(""), ErrOutsideProject)
		os.Remove(filepath.Join(a.project, ".sessiond/progress.md"))
		a.symlink(t, "../../etc-x", ".sessiond/progress.md")
		a.check(t, append(""), ErrOutsideProject)
	})
	t.Run("a root file inside the project", func(t *testing.T) {
		// The kernel decides: the user may replace it (their directory),
		// never write into root's inode.
		inside := filepath.Join(a.project, "root-owned.md")
		writeTestFile(t, inside, "root's log\n")
		if err := os.Chmod(inside, 0o644); err != nil {
			t.Fatal(err)
		}
		old, err := os.Open(inside)
		if err != nil {
			t.Fatal(err)
		}
		defer old.Close()
		if _, err := a.p.AppendProgress("root-owned.md", entry); err != nil {
			t.Fatal(err)
		}
		if uid, _ := owner(t, inside); uid != a.u.UID {
			t.Errorf("new log owned by uid %d, want the user's %d", uid, a.u.UID)
		}
		buf := make([]byte, 100)
		n, _ := old.ReadAt(buf, 0)
		if string(buf[:n]) != "root's log\n" {
			t.Errorf("root's file was written: %q", buf[:n])
		}
	})
}

func TestAttackGitExclude(t *testing.T) {
	t.Run(".git/info linked to a root directory", func(t *testing.T) {
		a := newAttack(t)
		if err := os.Mkdir(filepath.Join(a.project, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		chown(t, filepath.Join(a.project, ".git"), a.u)
		a.symlink(t, a.rootDir, ".git/info")
		a.check(t, a.p.EnsureStateDir, ErrGitExclude)
		if _, err := os.Stat(filepath.Join(a.project, DirName)); err != nil {
			t.Errorf(".sessiond not made although only the exclude failed: %v", err)
		}
	})
	t.Run("gitdir: a root directory", func(t *testing.T) {
		a := newAttack(t)
		if err := os.Mkdir(filepath.Join(a.rootDir, "info"), 0o755); err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, filepath.Join(a.rootDir, "info", "exclude"), "# root's\n")
		if err := os.Chmod(filepath.Join(a.rootDir, "info", "exclude"), 0o644); err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, filepath.Join(a.project, ".git"), "gitdir: "+a.rootDir+"\n")
		chown(t, filepath.Join(a.project, ".git"), a.u)
		a.check(t, a.p.EnsureStateDir, ErrGitExclude)
	})
	t.Run("exclude linked to a root-only file", func(t *testing.T) {
		a := newAttack(t)
		if err := os.MkdirAll(filepath.Join(a.project, ".git", "info"), 0o755); err != nil {
			t.Fatal(err)
		}
		chown(t, filepath.Join(a.project, ".git"), a.u)
		chown(t, filepath.Join(a.project, ".git", "info"), a.u)
		a.symlink(t, a.secret, ".git/info/exclude")
		a.check(t, a.p.EnsureStateDir, ErrGitExclude)
	})
}

func TestAttackReadRootFiles(t *testing.T) {
	a := newAttack(t)
	inside := filepath.Join(a.project, "copy")
	writeTestFile(t, inside, secretText) // root's, 0600, in the project
	ops := map[string]struct {
		rel string
		op  func() error
	}{
		"feature list": {DefaultFeatureList, func() error { _, err := a.p.LoadFeatures(""); return err }},
		"sessiond.toml": {ProjectConfigFile, func() error {
			data, err := a.p.ReadConfig()
			if len(data) > 0 {
				return errors.New("read " + string(data))
			}
			return err
		}},
	}
	for name, o := range ops {
		t.Run(name+" linked out of the project", func(t *testing.T) {
			a.symlink(t, a.secret, o.rel)
			defer os.Remove(filepath.Join(a.project, o.rel))
			a.check(t, o.op, ErrOutsideProject)
		})
		t.Run(name+" linked to a root-only file in the project", func(t *testing.T) {
			a.symlink(t, "copy", o.rel)
			defer os.Remove(filepath.Join(a.project, o.rel))
			a.check(t, o.op, fs.ErrPermission)
		})
	}
}

// TestAttackDevices puts a device node, a FIFO and a symlink to /dev/zero in
// the project in place of each input: the user's read fails at once, naming
// what the path is, and reads nothing.
func TestAttackDevices(t *testing.T) {
	a := newAttack(t)
	for _, in := range inputOps(a.p) {
		for _, kind := range []string{"a FIFO", "a character device", "a link to /dev/zero"} {
			t.Run(in.rel+" "+kind, func(t *testing.T) {
				path := filepath.Join(a.project, in.rel)
				dirs := []string{filepath.Join(a.project, DirName), filepath.Join(a.project, ".git", "info"), filepath.Dir(path)}
				for _, d := range dirs {
					if in.rel == ".git" && strings.HasPrefix(d, path) {
						continue
					}
					if err := os.MkdirAll(d, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				for _, d := range dirs {
					for ; strings.HasPrefix(d, a.project+"/"); d = filepath.Dir(d) {
						_ = os.Lchown(d, a.u.UID, a.u.GID)
					}
				}
				defer os.RemoveAll(filepath.Join(a.project, strings.Split(in.rel, "/")[0]))
				if kind == "a link to /dev/zero" {
					a.symlink(t, "/dev/zero", in.rel)
					checkDeviceLink(t, in.rel, path, withinBound(t, in.rel, in.op))
					return
				}
				mode := uint32(syscall.S_IFIFO | 0o666)
				dev := 0
				if kind == "a character device" {
					mode, dev = syscall.S_IFCHR|0o666, int(unix.Mkdev(1, 5)) // /dev/zero
				}
				if err := syscall.Mknod(path, mode, dev); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				err := withinBound(t, in.rel, in.op)
				if !errors.Is(err, ErrFileType) || !strings.Contains(err.Error(), path+" is "+kind) {
					t.Fatalf("got %v, want an error saying %s is %s", err, path, kind)
				}
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("took %v", d)
				}
			})
		}
	}
}

// TestAttackStateDirSwap exchanges .sessiond with a symlink to a root
// directory in a tight loop (renameat2 RENAME_EXCHANGE) while sessions
// start: the handle makes .sessiond and writes its files. Root's directory
// keeps its mode, owner and content whatever the interleaving, both with
// the user's rights and with the daemon's own.
func TestAttackStateDirSwap(t *testing.T) {
	for _, asUser := range []bool{true, false} {
		name := "as the user"
		if !asUser {
			name = "with root's rights"
		}
		t.Run(name, func(t *testing.T) {
			a := newAttack(t)
			p := a.p
			if !asUser {
				var err error
				if p, err = OpenProject(a.project, nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := a.p.EnsureStateDir(); err != nil {
				t.Fatal(err)
			}
			a.symlink(t, a.rootDir, ".swap")
			before := a.rootState(t)
			stop := make(chan struct{})
			var swaps int
			var wg sync.WaitGroup
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(a.project, DirName), unix.AT_FDCWD, filepath.Join(a.project, ".swap"), unix.RENAME_EXCHANGE); err != nil {
						t.Errorf("exchange: %v", err)
						return
					}
					swaps++
				}
			})
			ok, refusedN := 0, 0
			for i := range 300 {
				ops := []func() error{
					p.EnsureStateDir,
					func() error { return p.SaveSessionState(&SessionState{ProgressPct: float64(i % 100)}) },
					func() error { return p.WriteContext(ContextInput{SessionID: "s", Now: testNow}) },
					func() error { return p.CreateLock(&Lock{SessionID: "s"}) },
					p.RemoveLock,
					func() error { _, err := p.AppendProgress("", ProgressEntry{Time: testNow}); return err },
				}
				for _, op := range ops {
					if err := op(); err == nil {
						ok++
					} else {
						refusedN++
					}
				}
			}
			close(stop)
			wg.Wait()
			if after := a.rootState(t); after != before {
				t.Errorf("root's directory changed during %d swaps:\nbefore:\n%s\nafter:\n%s", swaps, before, after)
			}
			if swaps < 100 || ok == 0 {
				t.Errorf("the race did not run: %d swaps, %d operations done, %d refused", swaps, ok, refusedN)
			}
			t.Logf("%d swaps, %d operations done, %d refused", swaps, ok, refusedN)
		})
	}
}

// TestAttackUnreachableProject checks that a user cannot tell a missing
// path from one they may not see: one message for all of them.
func TestAttackUnreachableProject(t *testing.T) {
	u := newTestUser(t)
	base := sharedDir(t)
	hidden := filepath.Join(base, "hidden")
	if err := os.MkdirAll(filepath.Join(hidden, "inside"), 0o700); err != nil {
		t.Fatal(err)
	}
	closed := filepath.Join(base, "closed")
	if err := os.Mkdir(closed, 0o000); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	writeTestFile(t, file, "")
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(base, "missing"), filepath.Join(hidden, "inside"), filepath.Join(hidden, "nothing"), closed, file} {
		_, err := OpenProject(dir, &u.Owner)
		want := "project directory " + dir + " does not exist or is not accessible to uid " + strconv.Itoa(u.UID)
		if !errors.Is(err, ErrProjectUnreachable) || err.Error() != want {
			t.Errorf("%s: got %v, want %q", dir, err, want)
		}
	}
	// Root reaches the hidden one, so the check is the user's.
	if _, err := OpenProject(filepath.Join(hidden, "inside"), nil); err != nil {
		t.Errorf("as root: %v", err)
	}
}

// TestAttackProjectNotWritable checks that nothing is created in a project
// the user cannot write, although root could.
func TestAttackProjectNotWritable(t *testing.T) {
	u := newTestUser(t)
	base := sharedDir(t)
	project := filepath.Join(base, "roots")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := OpenProject(project, &u.Owner)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []func() error{p.EnsureStateDir, func() error { return p.SaveSessionState(&SessionState{}) }} {
		err := op()
		if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "cannot write the project directory") {
			t.Errorf("got %v, want permission denied", err)
		}
	}
	if entries, _ := os.ReadDir(project); len(entries) != 0 {
		t.Errorf("created in root's directory: %v", entries)
	}
}

// TestAttackFilesAreTheUsers checks that everything written for the user
// belongs to the user, with no chown: .sessiond, its files, the exclude.
func TestAttackFilesAreTheUsers(t *testing.T) {
	a := newAttack(t)
	if err := os.MkdirAll(filepath.Join(a.project, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	chown(t, filepath.Join(a.project, ".git"), a.u)
	if err := a.p.EnsureStateDir(); err != nil {
		t.Fatal(err)
	}
	if err := a.p.SaveSessionState(&SessionState{}); err != nil {
		t.Fatal(err)
	}
	if err := a.p.SaveHandoff(&Handoff{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.p.AppendProgress("claude-progress.txt", ProgressEntry{Time: testNow}); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{DirName, DirName + "/" + SessionStateFile, DirName + "/" + HandoffFile, "claude-progress.txt", ".git/info", ".git/info/exclude"} {
		if uid, gid := owner(t, filepath.Join(a.project, rel)); uid != a.u.UID || gid != a.u.GID {
			t.Errorf("%s: owned by %d:%d, want %d:%d", rel, uid, gid, a.u.UID, a.u.GID)
		}
	}
	assertNoTaintedThread(t)
}

// TestAttackEndSpares: the spares an end writes into are made as the
// user, and one the user swapped for a link to root's file (a symlink, or
// a hard link root's file has) is never written through: the end writes
// its files as any new file.
func TestAttackEndSpares(t *testing.T) {
	a := newAttack(t)
	if err := a.p.EnsureStateDir(); err != nil {
		t.Fatal(err)
	}
	if err := a.p.PrepareEnd(""); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{HandoffFile, SessionStateFile, ProgressFile} {
		rel := DirName + "/" + SpareName(name)
		if uid, gid := owner(t, filepath.Join(a.project, rel)); uid != a.u.UID || gid != a.u.GID {
			t.Errorf("%s: owned by %d:%d, want %d:%d", rel, uid, gid, a.u.UID, a.u.GID)
		}
	}
	for _, kind := range []string{"symlink", "hard link"} {
		t.Run(kind, func(t *testing.T) {
			for _, name := range []string{HandoffFile, SessionStateFile, ProgressFile} {
				spare := filepath.Join(a.project, DirName, SpareName(name))
				_ = os.Remove(spare)
				_ = os.Remove(filepath.Join(a.project, DirName, name))
				if kind == "symlink" {
					a.symlink(t, a.rootFile, DirName+"/"+SpareName(name))
				} else if err := os.Link(a.rootFile, spare); err != nil {
					t.Fatal(err)
				}
			}
			a.check(t, func() error {
				if err := a.p.SaveHandoff(&Handoff{SessionID: "s1"}); err != nil {
					return err
				}
				if err := a.p.SaveSessionState(&SessionState{}); err != nil {
					return err
				}
				_, err := a.p.AppendProgress("", ProgressEntry{Time: testNow, SessionID: "s1"})
				return err
			}, nil)
			for _, name := range []string{HandoffFile, SessionStateFile, ProgressFile} {
				path := filepath.Join(a.project, DirName, name)
				if uid, _ := owner(t, path); uid != a.u.UID {
					t.Errorf("%s: owned by %d, want the user's %d", name, uid, a.u.UID)
				}
				if data, _ := os.ReadFile(path); !strings.Contains(string(data), "s1") && name != SessionStateFile {
					t.Errorf("%s does not hold the end:\n%s", name, data)
				}
			}
		})
	}
	assertNoTaintedThread(t)
}
