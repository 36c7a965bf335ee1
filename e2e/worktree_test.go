package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Worktrees (issue 16): parallel sessions on one repository, each in a git
// worktree of its own, with its .worktreeinclude files, its setup run, a
// port of its own, and a hand-back at the end.

// worktreeRec is the part of a record that says where a session runs.
type worktreeRec struct {
	ID         string `json:"id"`
	State      string `json:"state"`
	ProjectDir string `json:"project_dir"`
	RestartOf  string `json:"restart_of"`
	Worktree   *struct {
		Name   string `json:"name"`
		Branch string `json:"branch"`
		Path   string `json:"path"`
		Repo   string `json:"repo"`
		Base   string `json:"base"`
		Port   int    `json:"port"`
	} `json:"worktree"`
}

func (d *daemon) worktreeRecord(id string) worktreeRec {
	d.t.Helper()
	var rec worktreeRec
	out := d.mustCtl("inspect", id)
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		d.t.Fatalf("inspect %s: %v\n%s", id, err, out)
	}
	if rec.Worktree == nil {
		d.t.Fatalf("session %s has no worktree in its record:\n%s", id, out)
	}
	return rec
}

// worktreeList is sessionctl worktrees --json.
type worktreeList []struct {
	Name             string   `json:"name"`
	Branch           string   `json:"branch"`
	Path             string   `json:"path"`
	Repo             string   `json:"repo"`
	Port             int      `json:"port"`
	State            string   `json:"state"`
	CommitsAhead     int      `json:"commits_ahead"`
	UncommittedFiles []string `json:"uncommitted_files"`
	Review           string   `json:"review"`
	Sessions         []struct {
		ID    string `json:"id"`
		State string `json:"state"`
	} `json:"sessions"`
}

func (d *daemon) worktrees(args ...string) worktreeList {
	d.t.Helper()
	out := d.mustCtl(append([]string{"--json", "worktrees"}, args...)...)
	var list worktreeList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		d.t.Fatalf("worktrees --json: %v\n%s", err, out)
	}
	return list
}

// worktreeRepo makes a repository whose .worktreeinclude names its
// ignored .env, with a setup command and a port range in its sessiond.toml.
func worktreeRepo(t *testing.T) *ckptRepo {
	t.Helper()
	r := newCkptRepo(t)
	r.write("app.txt", "main line\n")
	r.write(".gitignore", ".env\n")
	r.write(".worktreeinclude", ".env\n")
	r.write("sessiond.toml", `[session]
checkpoint = ""
worktree_setup = ["echo \"setup in $SESSIOND_WORKTREE_NAME\" > setup.out", ["touch", "setup-argv.out"]]
port_range = "43100-43199"
`)
	r.commitAll("first")
	r.write(".env", "SECRET=from-main\n")
	return r
}

// agentScript is what each parallel session runs: it writes the same file
// differently, commits it on its branch, leaves one file uncommitted, and
// says it is done by touching ready.
const agentScript = `echo "$PORT $SESSIOND_PORT" > port.txt
echo "edited by $SESSIOND_WORKTREE_NAME" > app.txt
git add app.txt && git commit -q -m "work of $SESSIOND_WORKTREE_NAME"
echo "notes of $SESSIOND_WORKTREE_NAME" > notes.txt
touch ready
exec sleep 600`

func TestWorktreesForParallelSessions(t *testing.T) {
	r := worktreeRepo(t)
	mainHead := r.git("rev-parse", "HEAD")
	mainStatus := r.git("status", "--porcelain", "--ignored")
	d := startDaemon(t)

	names := []string{"w1", "w2", "w3"}
	ids := map[string]string{}
	for _, n := range names {
		ids[n] = d.start("--worktree="+n, r.dir, "--", "sh", "-c", agentScript)
	}
	recs := map[string]worktreeRec{}
	ports := map[int]string{}
	for _, n := range names {
		rec := d.worktreeRecord(ids[n])
		recs[n] = rec
		wt := rec.Worktree
		waitFile(t, filepath.Join(wt.Path, "ready"), 15*time.Second)
		if wt.Name != n || wt.Branch != "sessiond/"+n || wt.Repo != r.dir || wt.Base != mainHead || rec.ProjectDir != wt.Path {
			t.Errorf("%s: worktree %+v, project %s", n, *wt, rec.ProjectDir)
		}
		if rel, err := filepath.Rel(r.dir, wt.Path); err == nil && !strings.HasPrefix(rel, "..") {
			t.Errorf("%s: worktree %s is inside the repository", n, wt.Path)
		}
		if !strings.HasPrefix(wt.Path, filepath.Join(d.stateDir, "worktrees")+"/") {
			t.Errorf("%s: worktree %s is not under the state dir's worktrees/", n, wt.Path)
		}
		if wt.Port < 43100 || wt.Port > 43199 {
			t.Errorf("%s: port %d outside port_range", n, wt.Port)
		}
		if other, dup := ports[wt.Port]; dup {
			t.Errorf("%s and %s got the same port %d", n, other, wt.Port)
		}
		ports[wt.Port] = n
		if got := readFile(t, filepath.Join(wt.Path, "port.txt")); got != fmt.Sprintf("%d %d\n", wt.Port, wt.Port) {
			t.Errorf("%s: $PORT $SESSIOND_PORT = %q, want %d twice", n, got, wt.Port)
		}
		if got := readFile(t, filepath.Join(wt.Path, ".env")); got != "SECRET=from-main\n" {
			t.Errorf("%s: .env = %q, want the copy of the main work tree's", n, got)
		}
		if got := readFile(t, filepath.Join(wt.Path, "setup.out")); got != "setup in "+n+"\n" || !fileExists(filepath.Join(wt.Path, "setup-argv.out")) {
			t.Errorf("%s: setup.out = %q (and setup-argv.out: %v)", n, got, fileExists(filepath.Join(wt.Path, "setup-argv.out")))
		}
		if got := readFile(t, filepath.Join(wt.Path, "app.txt")); got != "edited by "+n+"\n" {
			t.Errorf("%s: app.txt = %q: another session's edit is in it", n, got)
		}
		if !fileExists(filepath.Join(wt.Path, ".sessiond", "context.md")) {
			t.Errorf("%s: the worktree has no .sessiond of its own", n)
		}
		if got := r.git("show", "sessiond/"+n+":app.txt"); got != "edited by "+n {
			t.Errorf("branch sessiond/%s has app.txt %q", n, got)
		}
	}
	// The main work tree: untouched, and its .sessiond is the main line's
	// (no session ran there).
	if got := r.read("app.txt"); got != "main line\n" {
		t.Errorf("main work tree's app.txt = %q", got)
	}
	if got := r.git("rev-parse", "HEAD"); got != mainHead {
		t.Errorf("main HEAD moved to %s", got)
	}
	if got := r.git("status", "--porcelain", "--ignored"); got != mainStatus {
		t.Errorf("main work tree status:\n%s\nwant:\n%s", got, mainStatus)
	}
	if fileExists(filepath.Join(r.dir, ".sessiond")) {
		t.Error("the worktree sessions wrote into the main work tree's .sessiond")
	}

	// ps shows the worktree of each; worktrees lists them with their
	// sessions.
	ps := d.mustCtl("ps")
	for _, n := range names {
		if !strings.Contains(ps, "[sessiond/"+n+"]") {
			t.Errorf("ps does not show the branch sessiond/%s:\n%s", n, ps)
		}
	}
	list := d.worktrees(r.dir)
	if len(list) != 3 {
		t.Fatalf("worktrees lists %d, want 3: %+v", len(list), list)
	}
	for _, w := range list {
		if w.State != "active" || len(w.Sessions) != 1 || w.Sessions[0].ID != ids[w.Name] || w.CommitsAhead != 1 ||
			!strings.Contains(strings.Join(w.UncommittedFiles, ","), "notes.txt") || !strings.Contains(w.Review, "...sessiond/"+w.Name) {
			t.Errorf("worktree %s: %+v", w.Name, w)
		}
	}

	// A checkpoint of a worktree session is on its own ref in the shared
	// repository, and leaves the worktree's branch alone.
	w1Head := r.git("rev-parse", "sessiond/w1")
	out := d.mustCtl("checkpoint", ids["w1"])
	if !strings.Contains(out, "refs/sessiond/checkpoints/"+ids["w1"]) {
		t.Errorf("checkpoint of w1: %s", out)
	}
	ckpt := r.git("rev-parse", "refs/sessiond/checkpoints/"+ids["w1"])
	if files := r.git("show", ckpt+":notes.txt"); files != "notes of w1" {
		t.Errorf("w1's checkpoint holds notes.txt %q", files)
	}
	if got := r.git("rev-parse", "sessiond/w1"); got != w1Head {
		t.Errorf("the checkpoint moved sessiond/w1")
	}

	// A kill -9 of the daemon loses none: the next one adopts the
	// sessions, knows every worktree and hands out none of their ports.
	d.kill9()
	d2 := startDaemonAt(t, d.stateDir, d.sock)
	for _, n := range names {
		rec := d2.worktreeRecord(ids[n])
		if rec.State != "running" || rec.Worktree.Path != recs[n].Worktree.Path || rec.Worktree.Port != recs[n].Worktree.Port {
			t.Errorf("%s after kill -9: %+v %+v", n, rec, *rec.Worktree)
		}
	}
	if list := d2.worktrees(); len(list) != 3 {
		t.Errorf("after kill -9 worktrees lists %d, want 3", len(list))
	}
	w4 := d2.start("--worktree=w4", r.dir, "--", "sleep", "600")
	if p := d2.worktreeRecord(w4).Worktree.Port; ports[p] != "" {
		t.Errorf("w4 got port %d, which %s holds", p, ports[p])
	}

	// A restart runs in the same worktree, with the same port.
	out = d2.mustCtl("restart", ids["w2"])
	next := strings.Fields(out)[len(strings.Fields(out))-1]
	rec := d2.waitStateWT(next, "running")
	if rec.RestartOf != ids["w2"] || rec.Worktree.Path != recs["w2"].Worktree.Path || rec.Worktree.Port != recs["w2"].Worktree.Port {
		t.Errorf("restart of w2: %+v %+v, want the worktree %s and port %d", rec, *rec.Worktree, recs["w2"].Worktree.Path, recs["w2"].Worktree.Port)
	}
	// So does a new start that names the worktree, and one in its
	// directory.
	d2.mustCtl("stop", next)
	again := d2.start("--worktree=w2", r.dir, "--", "sleep", "600")
	if p := d2.worktreeRecord(again).Worktree.Path; p != recs["w2"].Worktree.Path {
		t.Errorf("start --worktree=w2 again runs in %s", p)
	}
	d2.mustCtl("stop", again)
	inDir := d2.start(recs["w2"].Worktree.Path, "--", "true")
	if wt := d2.worktreeRecord(inDir).Worktree; wt.Name != "w2" {
		t.Errorf("a start in the worktree's directory is not its session: %+v", *wt)
	}

	// The hand-back.
	d2.mustCtl("stop", ids["w1"])
	var h struct {
		GitBranch        string   `json:"git_branch"`
		UncommittedFiles []string `json:"uncommitted_files"`
		Worktree         *struct {
			Path         string `json:"path"`
			Branch       string `json:"branch"`
			CommitsAhead int    `json:"commits_ahead"`
			Uncommitted  int    `json:"uncommitted"`
			Review       string `json:"review"`
		} `json:"worktree"`
	}
	if err := json.Unmarshal([]byte(d2.mustCtl("--json", "handoff", ids["w1"])), &h); err != nil {
		t.Fatal(err)
	}
	if h.Worktree == nil || h.Worktree.Path != recs["w1"].Worktree.Path || h.Worktree.Branch != "sessiond/w1" || h.Worktree.CommitsAhead != 1 ||
		h.Worktree.Uncommitted != len(h.UncommittedFiles) || h.Worktree.Uncommitted == 0 || h.GitBranch != "sessiond/w1" ||
		!strings.Contains(h.Worktree.Review, "diff "+mainHead[:12]+"...sessiond/w1") {
		t.Errorf("handoff of w1: %+v, worktree %+v", h, h.Worktree)
	}
	if !fileExists(filepath.Join(recs["w1"].Worktree.Path, ".sessiond", "handoff.json")) || fileExists(filepath.Join(r.dir, ".sessiond")) {
		t.Error("the handoff is not the worktree's own")
	}

	// rm: refused while a session runs, and with uncommitted work; with
	// --force the work is checkpointed first.
	if res := d2.ctl("worktree", "rm", "w3"); res.code != 1 || !strings.Contains(res.stderr, "live session") {
		t.Errorf("rm of a worktree with a live session:\n%s", res)
	}
	d2.mustCtl("stop", ids["w3"])
	if res := d2.ctl("worktree", "rm", "w3"); res.code != 1 || !strings.Contains(res.stderr, "uncommitted") || !strings.Contains(res.stderr, "notes.txt") {
		t.Errorf("rm of a worktree with uncommitted work:\n%s", res)
	}
	if !fileExists(recs["w3"].Worktree.Path) {
		t.Fatal("the refused rm removed the worktree")
	}
	out = d2.mustCtl("worktree", "rm", "--force", "w3")
	if !strings.Contains(out, "checkpoint") || !strings.Contains(out, "branch sessiond/w3 kept") {
		t.Errorf("rm --force w3: %s", out)
	}
	if fileExists(recs["w3"].Worktree.Path) {
		t.Error("rm --force left the directory")
	}
	if got := r.git("show", "refs/sessiond/checkpoints/"+ids["w3"]+":notes.txt"); got != "notes of w3" {
		t.Errorf("the checkpoint before rm --force holds notes.txt %q", got)
	}
	if got := r.git("show", "sessiond/w3:app.txt"); got != "edited by w3" {
		t.Errorf("the branch of the removed worktree lost its commit: %q", got)
	}
	list = d2.worktrees()
	var left []string
	for _, w := range list {
		left = append(left, w.Name)
	}
	sort.Strings(left)
	if strings.Join(left, ",") != "w1,w2,w4" {
		t.Errorf("after rm: %v", left)
	}
}

func (d *daemon) waitStateWT(id string, state string) worktreeRec {
	d.t.Helper()
	d.waitState(id, 15*time.Second, state)
	return d.worktreeRecord(id)
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWorktreeStartBadInput(t *testing.T) {
	d := startDaemon(t)
	r := worktreeRepo(t)
	r.git("branch", "sessiond/taken")

	setupFails := newCkptRepo(t)
	setupFails.write("a.txt", "a\n")
	setupFails.write("sessiond.toml", "[session]\nworktree_setup = [\"echo cannot install >&2; exit 4\"]\n")
	setupFails.commitAll("first")

	bare := filepath.Join(project(t), "b.git")
	r.git("clone", "-q", "--bare", r.dir, bare)

	detached := newCkptRepo(t)
	detached.write("a.txt", "a\n")
	detached.commitAll("first")
	detached.git("checkout", "-q", "--detach", "HEAD")

	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"branch in use", []string{"--worktree=taken", r.dir}, 1, "sessiond/taken"},
		{"bare repository", []string{"--worktree", bare}, 1, "bare repository"},
		{"detached HEAD", []string{"--worktree", detached.dir}, 1, "--from REF"},
		{"unknown ref", []string{"--worktree", "--from", "nope", r.dir}, 1, `"nope"`},
		{"not a repository", []string{"--worktree", project(t)}, 1, "not in a git repository"},
		{"setup fails", []string{"--worktree=s", setupFails.dir}, 1, "cannot install"},
		{"bad name", []string{"--worktree=a..b", r.dir}, 2, "not a valid git branch name"},
		{"--from without --worktree", []string{"--from", "main", r.dir}, 2, "give --worktree too"},
		{"two directories after --worktree", []string{"--worktree", setupFails.dir, r.dir}, 2, "--worktree="},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := d.ctl(append(append([]string{"start"}, tt.args...), "--", "true")...)
			if res.code != tt.code || !strings.Contains(res.stderr, tt.want) {
				t.Errorf("want exit %d saying %q:\n%s", tt.code, tt.want, res)
			}
		})
	}
	if list := d.worktrees(); len(list) != 0 {
		t.Errorf("failed starts left worktrees: %+v", list)
	}
	// A name after a space that is no directory is the worktree's name.
	spaced := d.start("--worktree", "feat-a", r.dir, "--", "sleep", "600")
	if p := d.inspect(spaced).ProjectDir; !strings.HasSuffix(p, "feat-a") {
		t.Errorf("start --worktree feat-a DIR runs in %s, want the worktree feat-a", p)
	}
	d.mustCtl("stop", spaced)
	d.mustCtl("worktree", "rm", "--force", "feat-a")
	if got := setupFails.git("branch", "--list", "sessiond/*"); got != "" {
		t.Errorf("the failed setup left branch %s", got)
	}
	if entries, _ := os.ReadDir(filepath.Join(d.stateDir, "worktrees")); len(entries) != 0 {
		t.Errorf("failed starts left directories in worktrees/: %v", entries)
	}
	// A session whose worktree has a live session is refused like any
	// project with one.
	id := d.start("--worktree=busy", r.dir, "--", "sleep", "600")
	if res := d.ctl("start", "--worktree=busy", r.dir, "--", "true"); res.code != 1 || !strings.Contains(res.stderr, id) {
		t.Errorf("a second session in a busy worktree:\n%s", res)
	}
	// A repository with uncommitted changes is fine: the worktree starts
	// from HEAD, and the start and the handoff say so.
	r.write("app.txt", "uncommitted\n")
	res := d.ctl("start", "--worktree=dirty", r.dir, "--", "true")
	if res.code != 0 || !strings.Contains(res.stderr, "1 uncommitted file") {
		t.Errorf("start from a dirty repository:\n%s", res)
	}
	dirty := strings.TrimSpace(strings.Split(strings.TrimSpace(res.stdout), "\n")[len(strings.Split(strings.TrimSpace(res.stdout), "\n"))-1])
	d.waitEnded(dirty, 15*time.Second)
	if h := d.mustCtl("--json", "handoff", dirty); !strings.Contains(h, "had 1 uncommitted file then") {
		t.Errorf("handoff of a worktree from a dirty repository does not say so:\n%s", h)
	}
	if got := readFile(t, filepath.Join(d.worktreeRecord(dirty).Worktree.Path, "app.txt")); got != "main line\n" {
		t.Errorf("the worktree has the uncommitted change: %q", got)
	}
	// A listing filtered by a directory there is not is a 400, not [].
	if resp, body := curl(t, d.sock, "GET", "/v1/worktrees?repo=/nonexistent/repo", nil); resp.StatusCode != 400 || !strings.Contains(string(body), "no such directory") {
		t.Errorf("worktrees of a directory there is not: %d %s, want 400", resp.StatusCode, body)
	}
	if resp, body := curl(t, d.sock, "GET", "/v1/worktrees?repo="+r.dir, nil); resp.StatusCode != 200 || !strings.Contains(string(body), "busy") {
		t.Errorf("worktrees of the repository: %d %s", resp.StatusCode, body)
	}
}

// TestWorktreeRootMode: a root daemon makes a user's worktree with that
// user's rights, where the user's own daemon keeps its state.
func TestWorktreeRootMode(t *testing.T) {
	u := newUser(t)
	home := u.project(t)
	if out, err := exec.Command("usermod", "-d", home, u.name).CombinedOutput(); err != nil {
		t.Fatalf("usermod -d: %v\n%s", err, out)
	}
	d := rootDaemon(t, u)

	// The user's repository, made by root and given to the user.
	repo := u.project(t)
	if err := os.Chown(repo, 0, 0); err != nil {
		t.Fatal(err)
	}
	r := &ckptRepo{t: t, dir: repo}
	r.git("init", "-q", "-b", "main")
	r.git("config", "user.name", "E2E Test")
	r.git("config", "user.email", "e2e@example.com")
	r.write("app.txt", "main line\n")
	r.write(".gitignore", ".env\n")
	r.write(".worktreeinclude", ".env\n")
	r.write("sessiond.toml", "[session]\nworktree_setup = [\"id -u > setup-uid.txt\"]\nport_range = \"43200-43299\"\n")
	r.commitAll("first")
	r.write(".env", "SECRET=user\n")
	if out, err := exec.Command("chown", "-R", fmt.Sprintf("%d:%d", u.uid, u.gid), repo).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v\n%s", err, out)
	}

	res := u.ctl(t, d.sock, "start", "-q", "--worktree=mine", repo, "--", "sh", "-c", "id -u > uid.txt; echo $HOME > home.txt; exec sleep 600")
	if res.code != 0 {
		t.Fatalf("start as the user:\n%s", res)
	}
	id := strings.TrimSpace(res.stdout)
	rec := d.worktreeRecord(id)
	wt := rec.Worktree
	wantRoot := filepath.Join(home, ".local", "state", "sessiond", "worktrees")
	if !strings.HasPrefix(wt.Path, wantRoot+"/") {
		t.Errorf("worktree at %s, want under %s", wt.Path, wantRoot)
	}
	waitLine(t, filepath.Join(wt.Path, "uid.txt"), 15*time.Second)
	uid := strconv.Itoa(u.uid) + "\n"
	for _, f := range []string{"uid.txt", "setup-uid.txt"} {
		if got := readFile(t, filepath.Join(wt.Path, f)); got != uid {
			t.Errorf("%s = %q, want the user's uid %q", f, got, uid)
		}
	}
	if got := readFile(t, filepath.Join(wt.Path, "home.txt")); got != home+"\n" {
		t.Errorf("the session's HOME = %q, want %s", got, home)
	}
	if got := readFile(t, filepath.Join(wt.Path, ".env")); got != "SECRET=user\n" {
		t.Errorf(".env = %q", got)
	}
	// Everything made for the worktree is the user's: its directories up
	// to the user's state dir, its files, and git's record of it.
	owned := []string{filepath.Join(home, ".local"), filepath.Join(repo, ".git", "worktrees", "mine")}
	err := filepath.Walk(wt.Path, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		owned = append(owned, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := filepath.Dir(wt.Path); p != home; p = filepath.Dir(p) {
		owned = append(owned, p)
	}
	for _, p := range owned {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != u.uid {
			t.Errorf("%s belongs to uid %d, want the user's %d", p, st.Uid, u.uid)
		}
	}
	if fileExists(filepath.Join(d.stateDir, "worktrees")) {
		t.Error("the root daemon made the user's worktree in its own state dir")
	}
	if got := strings.TrimSpace(r.git("-c", "safe.directory=*", "branch", "--list", "sessiond/mine")); !strings.HasSuffix(got, "sessiond/mine") {
		t.Errorf("branch sessiond/mine: %q", got)
	}

	// The user sees and removes their worktree; another user's view has
	// nothing of it.
	res = u.ctl(t, d.sock, "--json", "worktrees")
	if res.code != 0 || !strings.Contains(res.stdout, `"name": "mine"`) || !strings.Contains(res.stdout, `"state": "active"`) {
		t.Errorf("worktrees as the user:\n%s", res)
	}
	if res := u.ctl(t, d.sock, "stop", id); res.code != 0 {
		t.Fatalf("stop:\n%s", res)
	}
	if res := u.ctl(t, d.sock, "worktree", "rm", "--force", "mine"); res.code != 0 || fileExists(wt.Path) {
		t.Errorf("worktree rm --force as the user:\n%s", res)
	}
}
