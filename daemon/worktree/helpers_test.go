package worktree

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/proc"
)

// gitT runs git in dir and returns its trimmed stdout, failing the test on
// error.
func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := proc.Run(cmd); err != nil {
		t.Fatalf("git %s in %s: %v: %s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// write creates or replaces a file under dir, making its directories.
func write(t testing.TB, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// newRepo makes a repository with one commit: a tracked file, a
// .gitignore that ignores .env, *.local and build/, and a
// .worktreeinclude naming .env, config/db*.local, notes.txt and app.txt.
func newRepo(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dir, "repo")
	gitT(t, dir, "init", "-q", repo)
	write(t, repo, "app.txt", "main line\n")
	write(t, repo, ".gitignore", ".env\n*.local\nbuild/\n")
	write(t, repo, IncludeFile, ".env\nconfig/db*.local\nnotes.txt\napp.txt\n")
	gitT(t, repo, "add", "-A")
	gitT(t, repo, "commit", "-q", "-m", "first")
	return repo
}

// newManager opens a manager on a fresh state dir.
func newManager(t testing.TB) (*Manager, string) {
	t.Helper()
	stateDir := t.TempDir()
	m, err := Open(Options{StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	return m, stateDir
}

// req is a Prepare request of repo's worktree name, made in a fresh root.
func req(t testing.TB, repo, name string) PrepareRequest {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return PrepareRequest{Dir: repo, Name: name, Root: root, UID: os.Geteuid(), Env: os.Environ(),
		Ports: config.PortRange{First: 41000, Last: 41099}}
}

func prepare(t testing.TB, m *Manager, r PrepareRequest) Prepared {
	t.Helper()
	p, err := m.Prepare(context.Background(), r)
	if err != nil {
		t.Fatalf("prepare %s: %v", r.Name, err)
	}
	return p
}

// branches lists the repository's branches.
func branches(t testing.TB, repo string) []string {
	t.Helper()
	out := gitT(t, repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
