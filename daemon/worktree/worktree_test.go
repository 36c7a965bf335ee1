package worktree

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/state"
)

func TestPrepareMakesAWorktreeReadyToWorkIn(t *testing.T) {
	repo := newRepo(t)
	write(t, repo, ".env", "SECRET=1\n")             // ignored and named: copied
	write(t, repo, "config/db.local", "local db\n")  // ignored and named: copied
	write(t, repo, "config/other.local", "other\n")  // ignored, not named: left
	write(t, repo, "notes.txt", "untracked notes\n") // named but not ignored: left
	write(t, repo, "build/out.bin", "built\n")       // ignored, not named: left
	headBefore := gitT(t, repo, "rev-parse", "HEAD")
	statusBefore := gitT(t, repo, "status", "--porcelain")

	m, stateDir := newManager(t)
	r := req(t, repo, "feature-1")
	r.Setup = config.SetupCommands{
		{Shell: `echo "port=$PORT sessiond_port=$SESSIOND_PORT branch=$SESSIOND_WORKTREE_BRANCH" > setup.out`},
		{Argv: []string{"touch", "argv.out"}},
	}
	p := prepare(t, m, r)
	e := p.Entry
	if !p.Created || p.Remade || p.Copied != 2 || p.SetupRan != 2 {
		t.Errorf("prepared = %+v, want created, 2 files copied, 2 setup commands", p)
	}
	if want := filepath.Join(r.Root, repoDirName(repo), "feature-1"); e.Path != want {
		t.Errorf("path = %s, want %s", e.Path, want)
	}
	if e.Branch != "sessiond/feature-1" || e.Repo != repo || e.Base != headBefore || e.From != "main" || e.State != StateReady {
		t.Errorf("entry = %+v", e)
	}
	if !r.Ports.Contains(e.Port) || e.Holder != "" {
		t.Errorf("port %d (holder %q), want one of %s held for the start", e.Port, e.Holder, r.Ports)
	}
	if got := gitT(t, e.Path, "symbolic-ref", "--short", "HEAD"); got != e.Branch {
		t.Errorf("worktree is on %s, want %s", got, e.Branch)
	}
	for name, want := range map[string]string{".env": "SECRET=1\n", "config/db.local": "local db\n", "app.txt": "main line\n"} {
		if got := read(t, filepath.Join(e.Path, name)); got != want {
			t.Errorf("%s in the worktree = %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"config/other.local", "notes.txt", "build/out.bin"} {
		if exists(filepath.Join(e.Path, name)) {
			t.Errorf("%s was copied: only ignored files that .worktreeinclude names are", name)
		}
	}
	want := "port=" + strconv.Itoa(e.Port) + " sessiond_port=" + strconv.Itoa(e.Port) + " branch=sessiond/feature-1\n"
	if got := read(t, filepath.Join(e.Path, "setup.out")); got != want {
		t.Errorf("setup saw %q, want %q", got, want)
	}
	if !exists(filepath.Join(e.Path, "argv.out")) {
		t.Error("the argv setup command did not run")
	}
	// The main work tree is as it was.
	if got := gitT(t, repo, "rev-parse", "HEAD"); got != headBefore {
		t.Errorf("HEAD moved: %s, want %s", got, headBefore)
	}
	if got := gitT(t, repo, "status", "--porcelain"); got != statusBefore {
		t.Errorf("main work tree status changed:\n%s\nwant:\n%s", got, statusBefore)
	}
	// The index is on disk: a new manager knows the worktree.
	m2, err := Open(Options{StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := m2.Get(e.Key()); !ok || got.Path != e.Path || got.Port != e.Port || !m2.Loaded() {
		t.Errorf("reopened index: %+v, %v", got, ok)
	}
	if fi, err := os.Stat(filepath.Join(stateDir, IndexFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("index file: %v, %v; want mode 0600", fi, err)
	}
}

func TestPrepareFromARef(t *testing.T) {
	repo := newRepo(t)
	first := gitT(t, repo, "rev-parse", "HEAD")
	write(t, repo, "app.txt", "second\n")
	gitT(t, repo, "commit", "-q", "-am", "second")
	gitT(t, repo, "checkout", "-q", "--detach", "HEAD")
	m, _ := newManager(t)
	r := req(t, repo, "old")
	r.From = first
	e := prepare(t, m, r).Entry
	if e.Base != first || e.From != first {
		t.Errorf("base %s from %s, want %s", e.Base, e.From, first)
	}
	if got := read(t, filepath.Join(e.Path, "app.txt")); got != "main line\n" {
		t.Errorf("worktree from %s has app.txt %q", first, got)
	}
}

func TestDirtyRepositoryStartsFromHEAD(t *testing.T) {
	repo := newRepo(t)
	write(t, repo, "app.txt", "uncommitted edit\n")
	write(t, repo, "new.txt", "untracked\n")
	m, _ := newManager(t)
	p := prepare(t, m, req(t, repo, "clean"))
	if p.Entry.RepoUncommitted != 2 || len(p.Notices) != 1 || !strings.Contains(p.Notices[0], "2 uncommitted files") {
		t.Errorf("prepared %+v, want a notice of 2 uncommitted files", p)
	}
	if got := read(t, filepath.Join(p.Entry.Path, "app.txt")); got != "main line\n" {
		t.Errorf("the worktree has the uncommitted edit: %q", got)
	}
	if exists(filepath.Join(p.Entry.Path, "new.txt")) {
		t.Error("the worktree has the untracked file")
	}
	if got := read(t, filepath.Join(repo, "app.txt")); got != "uncommitted edit\n" {
		t.Errorf("the main work tree's edit is gone: %q", got)
	}
}

// nothingLeft checks that a failed Prepare left no directory, branch,
// entry or index change behind.
func nothingLeft(t *testing.T, m *Manager, repo string, r PrepareRequest, branchesBefore []string) {
	t.Helper()
	if list := m.List(); len(list) != 0 {
		t.Errorf("entries left: %+v", list)
	}
	if got := branches(t, repo); strings.Join(got, ",") != strings.Join(branchesBefore, ",") {
		t.Errorf("branches = %v, want %v", got, branchesBefore)
	}
	if got := gitT(t, repo, "worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 1 {
		t.Errorf("git still lists worktrees:\n%s", got)
	}
	if exists(filepath.Join(r.Root, repoDirName(repo), r.Name)) {
		t.Errorf("directory %s left", filepath.Join(r.Root, repoDirName(repo), r.Name))
	}
}

func TestBadInput(t *testing.T) {
	busyPort := func(t *testing.T) int {
		l, err := net.Listen("tcp", "0.0.0.0:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l.Addr().(*net.TCPAddr).Port
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, repo string, r *PrepareRequest)
		want  error
		msg   string
	}{
		{"not a repository", func(t *testing.T, repo string, r *PrepareRequest) { r.Dir = t.TempDir() }, ErrNotRepo, "not in a git repository"},
		{"bare repository", func(t *testing.T, repo string, r *PrepareRequest) {
			bare := filepath.Join(t.TempDir(), "b.git")
			gitT(t, repo, "clone", "-q", "--bare", repo, bare)
			r.Dir = bare
		}, ErrBare, "bare repository"},
		{"detached HEAD", func(t *testing.T, repo string, r *PrepareRequest) {
			gitT(t, repo, "checkout", "-q", "--detach", "HEAD")
		}, ErrDetached, "--from REF"},
		{"no commits", func(t *testing.T, repo string, r *PrepareRequest) {
			empty := filepath.Join(t.TempDir(), "empty")
			gitT(t, repo, "init", "-q", empty)
			r.Dir = empty
		}, ErrNoCommits, "no commits"},
		{"branch in use", func(t *testing.T, repo string, r *PrepareRequest) {
			gitT(t, repo, "branch", "sessiond/"+r.Name)
		}, ErrBranchExists, "git branch -D sessiond/x"},
		{"directory in the way", func(t *testing.T, repo string, r *PrepareRequest) {
			write(t, filepath.Join(r.Root, repoDirName(repo), r.Name), "mine.txt", "keep me\n")
		}, ErrPathExists, "already exists"},
		{"unknown ref", func(t *testing.T, repo string, r *PrepareRequest) { r.From = "no-such-branch" }, ErrBadRef, "no-such-branch"},
		{"option as ref", func(t *testing.T, repo string, r *PrepareRequest) { r.From = "--output=/tmp/x" }, ErrBadRef, "--from"},
		{"bad name", func(t *testing.T, repo string, r *PrepareRequest) { r.Name = "a..b" }, nil, "not a valid git branch name"},
		{"worktree_dir inside the repository", func(t *testing.T, repo string, r *PrepareRequest) {
			r.Root = filepath.Join(repo, "trees")
		}, ErrInsideRepo, "outside it"},
		{"setup fails", func(t *testing.T, repo string, r *PrepareRequest) {
			r.Setup = config.SetupCommands{{Shell: "true"}, {Shell: "echo npm says no >&2; exit 3"}}
		}, ErrSetup, "npm says no"},
		{"setup program missing", func(t *testing.T, repo string, r *PrepareRequest) {
			r.Setup = config.SetupCommands{{Argv: []string{"/nonexistent/tool"}}}
		}, ErrSetup, "/nonexistent/tool"},
		{"port range exhausted", func(t *testing.T, repo string, r *PrepareRequest) {
			p := busyPort(t)
			r.Ports = config.PortRange{First: p, Last: p}
		}, ErrNoPort, "bound by other programs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := newRepo(t)
			m, _ := newManager(t)
			r := req(t, repo, "x")
			tt.setup(t, repo, &r)
			before := branches(t, repo)
			_, err := m.Prepare(context.Background(), r)
			if err == nil {
				t.Fatal("Prepare succeeded")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err = %q, want it to say %q", err, tt.msg)
			}
			if r.Dir == repo && tt.name != "directory in the way" {
				nothingLeft(t, m, repo, r, before)
			}
			if tt.name == "directory in the way" {
				if got := read(t, filepath.Join(r.Root, repoDirName(repo), r.Name, "mine.txt")); got != "keep me\n" {
					t.Errorf("the directory in the way was touched: %q", got)
				}
			}
		})
	}
}

func TestReuseAndDeletedByHand(t *testing.T) {
	repo := newRepo(t)
	m, _ := newManager(t)
	r := req(t, repo, "w")
	r.Setup = config.SetupCommands{{Shell: "echo ran >> " + filepath.Join(t.TempDir(), "count")}}
	count := strings.TrimPrefix(r.Setup[0].Shell, "echo ran >> ")
	e := prepare(t, m, r).Entry
	write(t, e.Path, "work.txt", "committed work\n")
	gitT(t, e.Path, "add", "work.txt")
	gitT(t, e.Path, "commit", "-q", "-m", "work")

	again := prepare(t, m, r)
	if again.Created || again.Remade || again.Entry.Path != e.Path || again.SetupRan != 0 {
		t.Errorf("second prepare = %+v, want the same worktree reused without setup", again)
	}
	if got := read(t, count); got != "ran\n" {
		t.Errorf("setup ran %d times, want once", strings.Count(got, "ran"))
	}
	st, err := StatusOf(context.Background(), e, nil)
	if err != nil || st.Missing || st.Ahead != 1 || len(st.Uncommitted) != 0 || !strings.Contains(st.Review, "diff "+e.Base[:12]+"...sessiond/w") {
		t.Errorf("status = %+v, %v; want 1 commit ahead, nothing uncommitted", st, err)
	}

	if err := os.RemoveAll(e.Path); err != nil {
		t.Fatal(err)
	}
	if st, err := StatusOf(context.Background(), e, nil); err != nil || !st.Missing || st.Ahead != 1 {
		t.Errorf("status of a deleted worktree = %+v, %v; want missing, its commit still on the branch", st, err)
	}
	remade := prepare(t, m, r)
	if !remade.Remade || remade.Created || len(remade.Notices) != 1 {
		t.Errorf("prepare after the deletion = %+v, want it made again with a notice", remade)
	}
	if got := read(t, filepath.Join(e.Path, "work.txt")); got != "committed work\n" {
		t.Errorf("the branch's work is not in the worktree made again: %q", got)
	}
	if got := read(t, count); got != "ran\nran\n" {
		t.Errorf("setup ran %d times, want twice (the new directory gets it)", strings.Count(got, "ran"))
	}
	if got := gitT(t, repo, "worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 2 {
		t.Errorf("git lists:\n%s\nwant the main work tree and the one worktree", got)
	}
}

func TestOtherUsersWorktreeIsRefused(t *testing.T) {
	repo := newRepo(t)
	m, _ := newManager(t)
	r := req(t, repo, "mine")
	prepare(t, m, r)
	r.UID++
	if _, err := m.Prepare(context.Background(), r); err == nil || !strings.Contains(err.Error(), "belongs to uid") {
		t.Errorf("another user's prepare: %v, want a refusal", err)
	}
}

func TestRemove(t *testing.T) {
	ctx := context.Background()
	t.Run("uncommitted work is refused unless forced", func(t *testing.T) {
		repo := newRepo(t)
		m, _ := newManager(t)
		e := prepare(t, m, req(t, repo, "dirty")).Entry
		write(t, e.Path, "app.txt", "edited\n")
		_, err := m.Remove(ctx, RemoveRequest{Key: e.Key()})
		var ue *UncommittedError
		if !errors.As(err, &ue) || !errors.Is(err, ErrUncommitted) || len(ue.Files) != 1 || ue.Files[0] != "app.txt" {
			t.Fatalf("remove = %v, want an UncommittedError naming app.txt", err)
		}
		if !exists(e.Path) {
			t.Fatal("the refused removal removed the directory")
		}
		res, err := m.Remove(ctx, RemoveRequest{Key: e.Key(), Force: true})
		if err != nil || !res.BranchDeleted || res.Pruned || len(res.Discarded) != 1 {
			t.Fatalf("forced remove = %+v, %v", res, err)
		}
		if exists(e.Path) || contains(branches(t, repo), e.Branch) || len(m.List()) != 0 {
			t.Errorf("left: dir %v, branches %v, entries %v", exists(e.Path), branches(t, repo), m.List())
		}
		if exists(filepath.Dir(e.Path)) {
			t.Errorf("the repository's worktree directory %s is left empty", filepath.Dir(e.Path))
		}
	})
	t.Run("a branch with commits is kept", func(t *testing.T) {
		repo := newRepo(t)
		m, _ := newManager(t)
		e := prepare(t, m, req(t, repo, "done")).Entry
		write(t, e.Path, "feature.txt", "done\n")
		gitT(t, e.Path, "add", "feature.txt")
		gitT(t, e.Path, "commit", "-q", "-m", "feature")
		res, err := m.Remove(ctx, RemoveRequest{Key: e.Key()})
		if err != nil || res.BranchDeleted || res.Ahead != 1 {
			t.Fatalf("remove = %+v, %v; want the branch kept with 1 commit", res, err)
		}
		if !contains(branches(t, repo), e.Branch) || exists(e.Path) {
			t.Errorf("branch kept %v, dir %v", branches(t, repo), exists(e.Path))
		}
	})
	t.Run("a directory deleted by hand is pruned", func(t *testing.T) {
		repo := newRepo(t)
		m, _ := newManager(t)
		e := prepare(t, m, req(t, repo, "gone")).Entry
		if err := os.RemoveAll(e.Path); err != nil {
			t.Fatal(err)
		}
		res, err := m.Remove(ctx, RemoveRequest{Key: e.Key()})
		if err != nil || !res.Pruned || !res.BranchDeleted {
			t.Fatalf("remove = %+v, %v; want pruned and the branch deleted", res, err)
		}
		if got := gitT(t, repo, "worktree", "list", "--porcelain"); strings.Contains(got, e.Path) {
			t.Errorf("git still lists the deleted worktree:\n%s", got)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		m, _ := newManager(t)
		if _, err := m.Remove(ctx, RemoveRequest{Key: Key{Repo: "/r", Name: "x"}}); !errors.Is(err, ErrUnknown) {
			t.Errorf("err = %v, want ErrUnknown", err)
		}
	})
}

func TestPorts(t *testing.T) {
	repo := newRepo(t)
	m, stateDir := newManager(t)
	r := req(t, repo, "a")
	r.Ports = config.PortRange{First: 41200, Last: 41202}
	for _, p := range []int{41200, 41201, 41202} {
		if !portFree(p) {
			t.Skipf("port %d is in use on this machine", p)
		}
	}
	a := prepare(t, m, r).Entry
	r.Name = "b"
	b := prepare(t, m, r).Entry
	if a.Port != 41200 || b.Port != 41201 {
		t.Fatalf("ports %d, %d; want 41200, 41201", a.Port, b.Port)
	}
	// A session takes the port the start held.
	if p, err := m.Hold(a.Key(), "s1", r.Ports); err != nil || p != a.Port {
		t.Fatalf("hold = %d, %v; want %d", p, err, a.Port)
	}
	// A restarted daemon hands out neither port again.
	m2, err := Open(Options{StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	r.Name = "c"
	c, err := m2.Prepare(context.Background(), r)
	if err != nil || c.Entry.Port != 41202 {
		t.Fatalf("third worktree after a restart: port %d, %v; want 41202", c.Entry.Port, err)
	}
	r.Name = "d"
	if _, err := m2.Prepare(context.Background(), r); !errors.Is(err, ErrNoPort) {
		t.Fatalf("fourth worktree: %v, want ErrNoPort", err)
	}
	// Released at the session's end, the port goes back to its worktree
	// next time, unless another holds it.
	if err := m2.Release(a.Key(), "someone else"); err != nil {
		t.Fatal(err)
	}
	if e, _ := m2.Get(a.Key()); e.Port != a.Port {
		t.Errorf("a release by another holder let go of the port: %+v", e)
	}
	if err := m2.Release(a.Key(), "s1"); err != nil {
		t.Fatal(err)
	}
	if e, _ := m2.Get(a.Key()); e.Port != 0 || e.LastPort != a.Port {
		t.Errorf("after release: %+v, want no port, last port %d", e, a.Port)
	}
	if p, err := m2.Hold(a.Key(), "s2", r.Ports); err != nil || p != a.Port {
		t.Errorf("hold again = %d, %v; want its last port %d", p, err, a.Port)
	}
	// No range, no port.
	if p, err := m2.Hold(b.Key(), "s3", config.PortRange{}); err != nil || p != 0 {
		t.Errorf("hold without a range = %d, %v", p, err)
	}
}

func TestRecover(t *testing.T) {
	repo := newRepo(t)
	m, stateDir := newManager(t)
	r := req(t, repo, "live")
	live := prepare(t, m, r).Entry
	if _, err := m.Hold(live.Key(), "alive", r.Ports); err != nil {
		t.Fatal(err)
	}
	r.Name = "dead"
	dead := prepare(t, m, r).Entry
	if _, err := m.Hold(dead.Key(), "gone", r.Ports); err != nil {
		t.Fatal(err)
	}
	// A worktree a crash cut short: made by git, its entry still creating.
	half := Entry{Name: "half", Branch: "sessiond/half", Repo: repo, Base: live.Base, UID: os.Geteuid(),
		Path: filepath.Join(filepath.Dir(live.Path), "half"), State: StateCreating, Port: 41099}
	gitT(t, repo, "worktree", "add", "-q", "-b", half.Branch, half.Path, half.Base)
	var doc indexDoc
	if err := json.Unmarshal([]byte(read(t, filepath.Join(stateDir, IndexFile))), &doc); err != nil {
		t.Fatal(err)
	}
	doc.Worktrees = append(doc.Worktrees, half)
	b, _ := json.Marshal(doc)
	write(t, stateDir, IndexFile, string(b))

	m2, err := Open(Options{StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	m2.Recover(context.Background(), func(id string) bool { return id == "alive" }, func(int) (*state.Owner, *checkpoint.Credential, error) { return nil, nil, nil })
	if _, ok := m2.Get(half.Key()); ok || exists(half.Path) || contains(branches(t, repo), half.Branch) {
		t.Errorf("the half-made worktree is left: entry, dir %v, branches %v", exists(half.Path), branches(t, repo))
	}
	if e, _ := m2.Get(live.Key()); e.Port != live.Port || e.Holder != "alive" {
		t.Errorf("the live session's port was released: %+v", e)
	}
	if e, _ := m2.Get(dead.Key()); e.Port != 0 || e.LastPort != dead.Port {
		t.Errorf("the ended session's port is still held: %+v", e)
	}
}

func TestCorruptIndexIsKeptAside(t *testing.T) {
	stateDir := t.TempDir()
	write(t, stateDir, IndexFile, `{"version": 1, "worktrees": [`)
	m, err := Open(Options{StateDir: stateDir})
	if err == nil || m == nil || m.Loaded() || len(m.List()) != 0 {
		t.Fatalf("open a corrupt index: %v, %v", m, err)
	}
	if kept, _ := filepath.Glob(filepath.Join(stateDir, IndexFile+".corrupt-*")); len(kept) != 1 {
		t.Errorf("corrupt index kept as %v", kept)
	}
	e := Entry{Name: "w", Branch: "sessiond/w", Repo: "/r", Path: "/r-w", Port: 5, Holder: "s"}
	if err := m.Adopt(e); err != nil {
		t.Fatal(err)
	}
	if got, ok := m.Get(e.Key()); !ok || got.State != StateReady || got.Port != 5 {
		t.Errorf("adopted %+v, %v", got, ok)
	}
}

func TestParallelPrepares(t *testing.T) {
	repo := newRepo(t)
	m, _ := newManager(t)
	root := req(t, repo, "x").Root
	var wg sync.WaitGroup
	errs := make([]error, 4)
	ports := make([]int, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := req(t, repo, "p"+strconv.Itoa(i))
			r.Root = root
			p, err := m.Prepare(context.Background(), r)
			errs[i], ports[i] = err, p.Entry.Port
		}()
	}
	wg.Wait()
	seen := map[int]bool{}
	for i, err := range errs {
		if err != nil {
			t.Errorf("prepare %d: %v", i, err)
		}
		if seen[ports[i]] {
			t.Errorf("port %d handed out twice: %v", ports[i], ports)
		}
		seen[ports[i]] = true
	}
	if n := len(m.List()); n != 4 {
		t.Errorf("%d entries, want 4", n)
	}
}

func TestDir(t *testing.T) {
	for _, tt := range []struct {
		dir, state, home string
		other            bool
		want             string
	}{
		{"", "/var/lib/sessiond", "/home/u", false, "/var/lib/sessiond/worktrees"},
		{"", "/var/lib/sessiond", "/home/u", true, "/home/u/.local/state/sessiond/worktrees"},
		{"~/trees", "/s", "/home/u", true, "/home/u/trees"},
		{"/srv/trees/", "/s", "/home/u", true, "/srv/trees"},
	} {
		got, err := Dir(tt.dir, tt.state, tt.home, tt.other)
		if err != nil || got != tt.want {
			t.Errorf("Dir(%q, %q, %q, %v) = %q, %v; want %q", tt.dir, tt.state, tt.home, tt.other, got, err, tt.want)
		}
	}
	if _, err := Dir("", "/s", "", true); err == nil {
		t.Error("a user without a home got a default directory")
	}
}

func TestRunsNothingOfTheRepository(t *testing.T) {
	repo := newRepo(t)
	marks := t.TempDir()
	hook := filepath.Join(repo, ".git", "hooks", "post-checkout")
	write(t, filepath.Dir(hook), "post-checkout", "#!/bin/sh\ntouch "+filepath.Join(marks, "hook")+"\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, repo, ".gitattributes", "*.txt filter=evil\n")
	gitT(t, repo, "add", ".gitattributes")
	gitT(t, repo, "commit", "-q", "-m", "attributes")
	// Set after the commit, so that only a checkout would run it.
	gitT(t, repo, "config", "filter.evil.smudge", "touch "+filepath.Join(marks, "smudge")+"; cat")
	gitT(t, repo, "config", "filter.evil.required", "true")
	m, _ := newManager(t)
	e := prepare(t, m, req(t, repo, "safe")).Entry
	if got := read(t, filepath.Join(e.Path, "app.txt")); got != "main line\n" {
		t.Errorf("app.txt = %q", got)
	}
	for _, mark := range []string{"hook", "smudge"} {
		if exists(filepath.Join(marks, mark)) {
			t.Errorf("the repository's %s ran while the worktree was made", mark)
		}
	}
}

func TestRemoveCheckStopsIt(t *testing.T) {
	repo := newRepo(t)
	m, _ := newManager(t)
	r := req(t, repo, "held")
	e := prepare(t, m, r).Entry
	var during string
	_, err := m.Remove(context.Background(), RemoveRequest{Key: e.Key(), Check: func() error {
		cur, _ := m.Get(e.Key())
		during = cur.State
		if _, herr := m.Hold(e.Key(), "late", r.Ports); !errors.Is(herr, ErrBusy) {
			t.Errorf("a session took the worktree being removed: %v", herr)
		}
		return errors.New("a session runs there")
	}})
	if err == nil || !strings.Contains(err.Error(), "a session runs there") || during != StateRemoving {
		t.Fatalf("remove = %v (state during the check %q)", err, during)
	}
	if cur, ok := m.Get(e.Key()); !ok || cur.State != StateReady || !exists(e.Path) {
		t.Errorf("after the stopped removal: %+v, dir %v", cur, exists(e.Path))
	}
}

// A worktree that another git is adding (its commondir not written yet)
// makes git worktree list fail for a moment: the repository's main work
// tree is found all the same once the add is over.
func TestMainWorkTreeWhileAWorktreeIsAdded(t *testing.T) {
	repo := newRepo(t)
	half := filepath.Join(repo, ".git", "worktrees", "half")
	if err := os.MkdirAll(half, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(repo, ".git", "worktrees", "half"), "gitdir", filepath.Join(t.TempDir(), "half", ".git")+"\n")
	write(t, filepath.Join(repo, ".git", "worktrees", "half"), "commondir", "")
	if _, err := checkpoint.Git(context.Background(), checkpoint.GitRequest{Dir: repo, Args: []string{"worktree", "list"}}); err == nil || !strings.Contains(err.Error(), "failed to read") {
		t.Fatalf("git worktree list beside a worktree half made: %v, want it to fail (the race this test stands for)", err)
	}
	go func() {
		time.Sleep(40 * time.Millisecond)
		_ = os.WriteFile(filepath.Join(half, "commondir"), []byte("../..\n"), 0o644)
	}()
	got, err := mainWorkTree(context.Background(), repo, nil)
	if err != nil || got != repo {
		t.Errorf("mainWorkTree = %q, %v; want %s", got, err, repo)
	}
}
