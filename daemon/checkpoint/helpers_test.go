package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sessiond/sessiond/daemon/proc"
)

// gitT runs git in dir and returns its trimmed stdout, failing the test on
// error.
func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitE(dir, nil, args...)
	if err != nil {
		t.Fatalf("git %s in %s: %v", strings.Join(args, " "), dir, err)
	}
	return out
}

// gitE runs git in dir and returns its trimmed stdout, or an error with its
// stderr.
func gitE(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := proc.Run(cmd); err != nil {
		return "", &testGitError{err: err, stderr: stderr.String()}
	}
	return strings.TrimSpace(stdout.String()), nil
}

type testGitError struct {
	err    error
	stderr string
}

func (e *testGitError) Error() string { return e.err.Error() + ": " + e.stderr }

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

func read(t testing.TB, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(dir, name string) bool {
	_, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(name)))
	return err == nil
}

// newRepo makes a git repository with two commits, a .gitignore, and a
// private TMPDIR so that tests can check that no temporary file is left.
func newRepo(t *testing.T) string {
	t.Helper()
	t.Setenv("TMPDIR", t.TempDir())
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "init", "-q")
	write(t, dir, ".gitignore", "*.log\nbuild/\n")
	write(t, dir, "README.md", "hello\n")
	write(t, dir, "src/main.go", "package main\n")
	write(t, dir, "src/util/util.go", "package util\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "first")
	write(t, dir, "docs/guide.md", "guide\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "second")
	return dir
}

func newCheckpointer(t *testing.T) *Checkpointer {
	t.Helper()
	return New(Options{StateDir: t.TempDir()})
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// userState is everything of the user's that a ref-mode checkpoint must not
// change: HEAD, the branch, the index bytes, the stash, what is staged, and
// any in-progress operation.
func userState(t *testing.T, dir string) string {
	t.Helper()
	gitDir := gitT(t, dir, "rev-parse", "--absolute-git-dir")
	var b strings.Builder
	head, err := gitE(dir, nil, "rev-parse", "-q", "--verify", "HEAD")
	if err != nil {
		head = "(unborn)"
	}
	b.WriteString("HEAD " + head + "\n")
	sym, _ := gitE(dir, nil, "symbolic-ref", "-q", "HEAD")
	b.WriteString("branch " + sym + "\n")
	idx, err := os.ReadFile(gitT(t, dir, "rev-parse", "--path-format=absolute", "--git-path", "index"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	sum := sha256.Sum256(idx)
	b.WriteString("index " + hex.EncodeToString(sum[:]) + "\n")
	b.WriteString("stash " + gitT(t, dir, "stash", "list", "--format=%H %s") + "\n")
	staged, _ := gitE(dir, nil, "diff", "--cached", "--name-status")
	b.WriteString("staged " + staged + "\n")
	b.WriteString("branches " + gitT(t, dir, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads", "refs/tags", "refs/stash") + "\n")
	for _, f := range []string{"MERGE_HEAD", "rebase-merge", "index.lock", "ORIG_HEAD"} {
		if exists(gitDir, f) {
			b.WriteString("has " + f + "\n")
		}
	}
	return b.String()
}

// assertClean checks that no lock or temporary file was left behind.
func assertClean(t *testing.T, dir string) {
	t.Helper()
	out, err := gitE(dir, nil, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err == nil && exists(filepath.Dir(out), filepath.Base(out)+".lock") {
		t.Errorf("%s.lock left behind", out)
	}
	if tmp := os.Getenv("TMPDIR"); tmp != "" {
		ents, _ := os.ReadDir(tmp)
		for _, e := range ents {
			t.Errorf("temporary file left behind: %s", filepath.Join(tmp, e.Name()))
		}
	}
}

// treeFiles lists the paths in a tree.
func treeFiles(t *testing.T, dir, tree string) []string {
	t.Helper()
	out := gitT(t, dir, "ls-tree", "-r", "--name-only", "--full-tree", tree)
	if out == "" {
		return nil
	}
	files := strings.Split(out, "\n")
	sort.Strings(files)
	return files
}

func blob(t *testing.T, dir, tree, path string) string {
	t.Helper()
	return gitT(t, dir, "cat-file", "-p", tree+":"+path)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// listing returns every path under dir (for "nothing was created" checks).
func listing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, rel+" "+fi.Mode().String()+" "+fi.ModTime().String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
