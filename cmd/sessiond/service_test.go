package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestUnstableLocation(t *testing.T) {
	tmp := t.TempDir()
	checkout := filepath.Join(tmp, "src", "sessiond")
	for _, d := range []string{filepath.Join(checkout, "bin"), filepath.Join(checkout, "cmd", "sessiond")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(checkout, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitTree := filepath.Join(tmp, "proj")
	if err := os.MkdirAll(filepath.Join(gitTree, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOCACHE", filepath.Join(string(filepath.Separator), "var", "cache", "gobuild"))
	for _, c := range []struct {
		exe, want string // want: a word of the reason, "" for stable
	}{
		{filepath.Join(checkout, "bin", "sessiond"), "Go source tree"},
		{filepath.Join(checkout, "cmd", "sessiond", "sessiond"), "Go source tree"},
		{filepath.Join(gitTree, "dist", "sessiond"), "source checkout"},
		{"/var/cache/gobuild/ab/exe/sessiond", "Go build cache"},
		{"/home/me/.cache/go-build123/b001/exe/sessiond", "build directory"},
		{"/tmp/sessiond", "temporary directory"},
		{"/var/tmp/x/sessiond", "temporary directory"},
		{filepath.Join(tmp, "sessiond"), "temporary directory"},
		{"/usr/local/bin/sessiond", ""},
		{"/usr/bin/sessiond", ""},
		{"/opt/sessiond/bin/sessiond", ""},
	} {
		got := unstableLocation(c.exe)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("unstableLocation(%s) = %q, want %q", c.exe, got, c.want)
		}
	}
}

func TestLineChanges(t *testing.T) {
	old := "[Service]\nExecStart=/a run\nRestart=on-failure\n"
	new := "[Service]\nExecStart=/a run --config /c\nRestart=on-failure\n"
	got := lineChanges(old, new)
	want := []string{"- ExecStart=/a run", "+ ExecStart=/a run --config /c"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lineChanges = %q, want %q", got, want)
	}
	if got := lineChanges(new, new); len(got) != 0 {
		t.Errorf("lineChanges of equal texts = %q", got)
	}
}

func TestShellJoin(t *testing.T) {
	got := shellJoin([]string{"/usr/bin/sessiond", "run", "--config", "/a b/it's.toml", ""})
	want := `/usr/bin/sessiond run --config '/a b/it'\''s.toml' ''`
	if got != want {
		t.Errorf("shellJoin = %s, want %s", got, want)
	}
	if out, err := exec.Command("sh", "-c", "printf '%s|' "+got).Output(); err != nil || string(out) != "/usr/bin/sessiond|run|--config|/a b/it's.toml||" {
		t.Errorf("sh reads it back as %q (%v)", out, err)
	}
}

func TestRuntimeOf(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sessiond.toml")
	if err := os.WriteFile(cfg, []byte("socket = \"/run/x/s.sock\"\nstate_dir = \"/srv/state\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{
		{"/usr/bin/sessiond", "run", "--config", cfg},
		{"/usr/bin/sessiond", "run", "--config=" + cfg},
	} {
		rt := runtimeOf(false, argv)
		if rt.Config != cfg || rt.Socket != "/run/x/s.sock" || rt.StateDir != "/srv/state" || rt.Problem != "" {
			t.Errorf("runtimeOf(%q) = %+v", argv, rt)
		}
	}
	rt := runtimeOf(false, []string{"/usr/bin/sessiond", "run"})
	if rt.Config != "/etc/sessiond/sessiond.toml" || rt.Socket != "/run/sessiond/sessiond.sock" || rt.StateDir != "/var/lib/sessiond" {
		t.Errorf("system service defaults: %+v", rt)
	}
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("sockett = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rt := runtimeOf(false, []string{"/usr/bin/sessiond", "run", "--config", bad}); !strings.Contains(rt.Problem, "bad.toml") {
		t.Errorf("a broken config is not named: %+v", rt)
	}
}
