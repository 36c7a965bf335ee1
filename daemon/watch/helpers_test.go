package watch

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sessiond/sessiond/daemon/proc"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newHub returns a hub closed at the end of the test, and its observed logs.
func newHub(t testing.TB) (*Hub, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	h, err := NewHub(zap.New(core))
	if err != nil {
		t.Fatalf("NewHub: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("Hub.Close: %v", err)
		}
	})
	return h, logs
}

// watchDir starts a watch closed at the end of the test.
func watchDir(t testing.TB, h *Hub, root string, opt Options) *Watch {
	t.Helper()
	w, err := h.Watch(root, opt)
	if err != nil {
		t.Fatalf("Watch(%s): %v", root, err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// waitFor polls cond until it holds, for at most 10 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitChanged waits until every one of files is in the changed set.
func waitChanged(t testing.TB, w *Watch, files ...string) Stats {
	t.Helper()
	var st Stats
	waitFor(t, "changes to "+filepath.Join(files...), func() bool {
		st = w.Stats()
		for _, f := range files {
			if !slices.Contains(st.FilesChanged, f) {
				return false
			}
		}
		return true
	})
	return st
}

// mkfile writes a file, making its directories.
func mkfile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdirs(t testing.TB, root string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// gitInit makes dir a git repository.
func gitInit(t testing.TB, dir string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command("git", "init", "-q", dir)
	cmd.Env = gitEnv()
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := proc.Run(cmd); err != nil {
		t.Fatalf("git init %s: %v\n%s", dir, err, out.String())
	}
}

// logged reports whether a log message or field contains s.
func logged(logs *observer.ObservedLogs, s string) bool {
	for _, e := range logs.All() {
		if strings.Contains(e.Message, s) {
			return true
		}
		for _, f := range e.Context {
			if strings.Contains(f.String, s) {
				return true
			}
		}
	}
	return false
}

// runGit runs git in dir with the watcher's clean environment.
func runGit(t testing.TB, dir string, args ...string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := proc.Run(cmd); err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out.String())
	}
}
