package state

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestProjectID(t *testing.T) {
	got := ProjectID("/home/ada/src/shop")
	if len(got) != 12 || strings.Trim(got, "0123456789abcdef") != "" {
		t.Errorf("got %q, want 12 lowercase hex digits", got)
	}
	if again := ProjectID("/home/ada/src/shop"); again != got {
		t.Errorf("got %q then %q, want the same id", got, again)
	}
	if other := ProjectID("/home/ada/src/shop2"); other == got {
		t.Errorf("got %q for two paths, want different ids", got)
	}
}

func TestProjectDirExclude(t *testing.T) {
	tests := []struct {
		name string
		// setup makes the project and returns it with the exclude file git reads.
		setup   func(t *testing.T, root string) (project, exclude string)
		pattern string
	}{
		{"not a git project", func(t *testing.T, root string) (string, string) {
			return root, ""
		}, ""},
		{"git repository", func(t *testing.T, root string) (string, string) {
			writeTestFile(t, filepath.Join(root, ".git", "info", "exclude"), "# git ls-files --others --exclude-from=.git/info/exclude\n*.o")
			return root, filepath.Join(root, ".git", "info", "exclude")
		}, "/.sessiond/"},
		{"git repository without info/", func(t *testing.T, root string) (string, string) {
			if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			return root, filepath.Join(root, ".git", "info", "exclude")
		}, "/.sessiond/"},
		{"worktree .git file with commondir", func(t *testing.T, root string) (string, string) {
			main := filepath.Join(root, "main")
			wt := filepath.Join(root, "wt")
			gitdir := filepath.Join(main, ".git", "worktrees", "wt")
			writeTestFile(t, filepath.Join(gitdir, "commondir"), "../..\n")
			writeTestFile(t, filepath.Join(wt, ".git"), "gitdir: "+gitdir+"\n")
			return wt, filepath.Join(main, ".git", "info", "exclude")
		}, "/.sessiond/"},
		{"submodule .git file, relative gitdir", func(t *testing.T, root string) (string, string) {
			mod := filepath.Join(root, ".git", "modules", "sub")
			if err := os.MkdirAll(mod, 0o755); err != nil {
				t.Fatal(err)
			}
			sub := filepath.Join(root, "sub")
			writeTestFile(t, filepath.Join(sub, ".git"), "gitdir: ../.git/modules/sub\n")
			return sub, filepath.Join(mod, "info", "exclude")
		}, "/.sessiond/"},
		{"subdirectory of a repository", func(t *testing.T, root string) (string, string) {
			if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			project := filepath.Join(root, "services", "api")
			if err := os.MkdirAll(project, 0o755); err != nil {
				t.Fatal(err)
			}
			return project, filepath.Join(root, ".git", "info", "exclude")
		}, "/services/api/.sessiond/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			project, exclude := tt.setup(t, t.TempDir())
			var before string
			if exclude != "" {
				before, _ = readOptional(exclude)
			}
			for i := range 2 {
				dir, err := ProjectDir(project)
				if err != nil {
					t.Fatalf("call %d: %v", i+1, err)
				}
				if want := filepath.Join(project, DirName); dir != want {
					t.Errorf("got %s, want %s", dir, want)
				}
				if got := mode(t, dir); got != 0o700 {
					t.Errorf("mode: got %v, want %v", got, os.FileMode(0o700))
				}
			}
			if exclude == "" {
				return
			}
			got := readTestFile(t, exclude)
			if !strings.HasPrefix(got, before) {
				t.Errorf("exclude lost its content: got %q, want it to start with %q", got, before)
			}
			if n := strings.Count(got, tt.pattern+"\n"); n != 1 {
				t.Errorf("exclude %q: got the pattern %d times, want once", got, n)
			}
		})
	}
}

func readOptional(path string) (string, error) {
	data, err := os.ReadFile(path)
	return string(data), err
}

func TestProjectDirAlreadyExcluded(t *testing.T) {
	for _, line := range []string{".sessiond", ".sessiond/", "/.sessiond", "/.sessiond/"} {
		t.Run(line, func(t *testing.T) {
			root := t.TempDir()
			exclude := filepath.Join(root, ".git", "info", "exclude")
			writeTestFile(t, exclude, line+"\n")
			if _, err := ProjectDir(root); err != nil {
				t.Fatal(err)
			}
			if got := readTestFile(t, exclude); got != line+"\n" {
				t.Errorf("got %q, want %q", got, line+"\n")
			}
		})
	}
}

func TestProjectDirRefusesSymlink(t *testing.T) {
	root := t.TempDir()
	elsewhere := t.TempDir()
	if err := os.Chmod(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(root, DirName)); err != nil {
		t.Fatal(err)
	}
	if _, err := ProjectDir(root); err == nil {
		t.Fatal("got nil error for a symlinked .sessiond, want one")
	}
	if err := SaveSessionState(root, &SessionState{}); err == nil {
		t.Fatal("SaveSessionState through a symlinked .sessiond: got nil error, want one")
	}
	if got := mode(t, elsewhere); got != 0o755 {
		t.Errorf("symlink target mode: got %v, want %v", got, os.FileMode(0o755))
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("symlink target: got %d entries, want none", len(entries))
	}
}

func TestProjectDirBrokenGitFile(t *testing.T) {
	root := t.TempDir()
	writeTestFile(t, filepath.Join(root, ".git"), "not a gitdir line\n")
	_, err := ProjectDir(root)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(root, ".git")) {
		t.Errorf("got %v, want an error naming %s", err, filepath.Join(root, ".git"))
	}
}

// TestProjectDirRealGit checks with git itself that .sessiond never shows
// up as untracked, in a repository and in a linked worktree.
func TestProjectDirRealGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("this test needs git: %v", err)
	}
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+root)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git(repo, "init", "-q")
	writeTestFile(t, filepath.Join(repo, "README"), "hi\n")
	git(repo, "add", "README")
	git(repo, "commit", "-qm", "init")
	wt := filepath.Join(root, "wt")
	git(repo, "worktree", "add", "-q", wt)

	// Whichever file is written first, .sessiond is kept out of git.
	if err := SaveSessionState(repo, &SessionState{ProgressPct: 1}); err != nil {
		t.Fatal(err)
	}
	if err := SaveHandoff(HandoffPath(wt), &Handoff{SessionID: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := AppendProgress(ProgressPath(wt), ProgressEntry{Time: testNow}); err != nil {
		t.Fatal(err)
	}
	for _, project := range []string{repo, wt} {
		if got := git(project, "status", "--porcelain", "--untracked-files=all"); got != "" {
			t.Errorf("%s: git status: got %q, want nothing", project, got)
		}
	}
	if got := readTestFile(t, filepath.Join(repo, ".git", "info", "exclude")); strings.Count(got, "/.sessiond/\n") != 1 {
		t.Errorf("exclude: got %q, want /.sessiond/ once", got)
	}
}
