package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

func TestCodexPrepareExec(t *testing.T) {
	l := testLaunch(t, "codex", "exec", "--skip-git-repo-check", "-s", "workspace-write", "fix the test")
	l.MCP = true
	p, err := Codex.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"codex",
		"-c", `notify=["/usr/local/bin/sessionctl","hook","codex"]`,
		"-c", `mcp_servers.sessiond={command="/usr/local/bin/sessionctl",args=["mcp"],env={SESSIOND_SESSION_ID="s1x2y3z4",SESSIOND_SOCKET="` + l.Socket + `"}}`,
		"exec", "--skip-git-repo-check", "-s", "workspace-write", "fix the test"}
	if !slices.Equal(p.Argv, want) {
		t.Errorf("argv\n got %q\nwant %q", p.Argv, want)
	}
	if !p.Integrated || p.Interactive || p.InitialState != StateWorking || p.ConversationID != "" || len(p.Files) != 0 {
		t.Errorf("plan %+v", p)
	}
	// The overrides are TOML, as Codex parses them.
	for _, kv := range []string{p.Argv[2], p.Argv[4]} {
		var v map[string]any
		if _, err := toml.Decode(kv, &v); err != nil {
			t.Errorf("%s is not TOML: %v", kv, err)
		}
	}
}

func TestCodexPrepareQuoting(t *testing.T) {
	l := testLaunch(t, "codex", "exec", "x")
	l.Sessionctl = `/opt/my "tools"/sessionctl`
	l.SessionID = "s1"
	l.MCP = true
	p, err := Codex.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	var n struct{ Notify []string }
	if _, err := toml.Decode(p.Argv[2], &n); err != nil || !slices.Equal(n.Notify, []string{l.Sessionctl, "hook", "codex"}) {
		t.Errorf("notify %q decodes to %q, %v", p.Argv[2], n.Notify, err)
	}
	var m struct {
		MCPServers map[string]struct {
			Command string
			Args    []string
			Env     map[string]string
		} `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(p.Argv[4], &m); err != nil || m.MCPServers["sessiond"].Command != l.Sessionctl || m.MCPServers["sessiond"].Env["SESSIOND_SESSION_ID"] != "s1" {
		t.Errorf("mcp server %q decodes to %+v, %v", p.Argv[4], m, err)
	}
}

func TestCodexPrepareChainsUserNotify(t *testing.T) {
	t.Run("config.toml", func(t *testing.T) {
		l := testLaunch(t, "codex", "exec", "x")
		writeFile(t, filepath.Join(l.home(), ".codex", "config.toml"), "model = \"o3\"\nnotify = [\"python3\", \"/home/dev/notify.py\"]\n")
		p, err := Codex.Prepare(context.Background(), l)
		if err != nil {
			t.Fatal(err)
		}
		if want := `notify=["/usr/local/bin/sessionctl","hook","codex","--","python3","/home/dev/notify.py"]`; p.Argv[2] != want {
			t.Errorf("notify %s, want %s", p.Argv[2], want)
		}
	})
	t.Run("CODEX_HOME", func(t *testing.T) {
		l := testLaunch(t, "codex", "exec", "x")
		home := filepath.Join(t.TempDir(), "codex-home")
		l.Env = append(l.Env, "CODEX_HOME="+home)
		writeFile(t, filepath.Join(home, "config.toml"), "notify = [\"notify-send\"]\n")
		p, _ := Codex.Prepare(context.Background(), l)
		if !strings.HasSuffix(p.Argv[2], `"--","notify-send"]`) {
			t.Errorf("notify %s does not chain CODEX_HOME's", p.Argv[2])
		}
	})
	t.Run("command line", func(t *testing.T) {
		l := testLaunch(t, "codex", "-c", `notify=["my-notifier","a b"]`, "exec", "--config", `notify=["other"]`, "x")
		p, err := Codex.Prepare(context.Background(), l)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"codex", "-c", `notify=["/usr/local/bin/sessionctl","hook","codex","--","other"]`, "exec", "x"}
		if !slices.Equal(p.Argv, want) {
			t.Errorf("argv\n got %q\nwant %q", p.Argv, want)
		}
	})
	t.Run("bad", func(t *testing.T) {
		l := testLaunch(t, "codex", "-c", "notify=not toml [", "exec", "x")
		p, err := Codex.Prepare(context.Background(), l)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Notices) != 1 || !strings.Contains(p.Notices[0], "not a TOML array") || p.Argv[2] != `notify=["/usr/local/bin/sessionctl","hook","codex"]` {
			t.Errorf("plan %+v", p)
		}
	})
	t.Run("bad config.toml", func(t *testing.T) {
		l := testLaunch(t, "codex", "exec", "x")
		writeFile(t, filepath.Join(l.home(), ".codex", "config.toml"), "notify = [")
		p, err := Codex.Prepare(context.Background(), l)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Notices) != 1 || !strings.Contains(p.Notices[0], "config.toml") || !p.Integrated {
			t.Errorf("plan %+v", p)
		}
	})
}

func TestCodexPrepareInteractive(t *testing.T) {
	l := testLaunch(t, "codex", "-m", "o3")
	l.TTY = true
	p, err := Codex.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Interactive || p.InitialState != StateWaiting || p.InitialWaiting != WaitPrompt {
		t.Errorf("plan %+v", p)
	}
	l.Argv = []string{"codex", "fix it"}
	if p, _ := Codex.Prepare(context.Background(), l); p.InitialState != StateWorking {
		t.Errorf("with a prompt: %+v", p)
	}
}

func TestCodexPrepareUntouched(t *testing.T) {
	for _, argv := range [][]string{
		{"codex", "login"},
		{"codex", "-c", "x=1", "mcp", "list"},
		{"codex", "exec", "review"},
		{"codex", "--version"},
	} {
		p, err := Codex.Prepare(context.Background(), testLaunch(t, argv...))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(p.Argv, argv) || p.Integrated || len(p.Notices) != 1 {
			t.Errorf("%q: plan %+v, want untouched with a notice", argv, p)
		}
	}
}

func TestCodexResume(t *testing.T) {
	const id = "01a230cd-8f0e-7d00-95b3-c9119499aab2"
	for _, tc := range []struct{ in, want []string }{
		{[]string{"codex", "exec", "-s", "read-only", "go on"}, []string{"codex", "exec", "-s", "read-only", "resume", id, "go on"}},
		{[]string{"codex", "-c", "k=1", "e", "go on", "--json"}, []string{"codex", "-c", "k=1", "exec", "--json", "resume", id, "go on"}},
		{[]string{"codex", "exec", "resume", "--last", "go on"}, []string{"codex", "exec", "resume", id, "go on"}},
		{[]string{"codex", "exec", "resume", "01a230cd-0000-7000-8000-000000000000", "more"}, []string{"codex", "exec", "resume", id, "more"}},
		{[]string{"codex", "-m", "o3", "fix it"}, []string{"codex", "-m", "o3", "resume", id, "fix it"}},
		{[]string{"codex"}, []string{"codex", "resume", id}},
		{[]string{"codex", "resume", "--last"}, []string{"codex", "resume", id}},
		{[]string{"codex", "fork", "other-id"}, []string{"codex", "resume", id}},
		{[]string{"codex", "--", "-odd prompt"}, []string{"codex", "resume", id, "--", "-odd prompt"}},
	} {
		got, err := Codex.Resume(tc.in, id)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Resume(%q)\n got %q, %v\nwant %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := Codex.Resume([]string{"codex", "login"}, id); !errors.Is(err, ErrNotResumable) {
		t.Errorf("login: %v", err)
	}
	if _, err := Codex.Resume([]string{"codex"}, "thread-1"); !errors.Is(err, ErrBadConversationID) {
		t.Errorf("bad id: %v", err)
	}
}

func TestCodexInteractive(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want bool
	}{
		{[]string{"codex"}, true},
		{[]string{"codex", "fix it"}, true},
		{[]string{"codex", "resume", "--last"}, true},
		{[]string{"codex", "exec", "fix it"}, false},
		{[]string{"codex", "e", "fix it"}, false},
		{[]string{"codex", "-m", "exec", "fix it"}, true},
		{[]string{"codex", "login"}, false},
	} {
		if got := Codex.Interactive(tc.argv); got != tc.want {
			t.Errorf("Interactive(%q) = %v, want %v", tc.argv, got, tc.want)
		}
	}
}

// writeRollout writes a rollout file the way Codex lays them out, with a
// session_meta first line.
func writeRollout(t *testing.T, home string, at time.Time, id, cwd string) string {
	t.Helper()
	dir := filepath.Join(home, "sessions", at.Format("2006"), at.Format("01"), at.Format("02"))
	path := filepath.Join(dir, "rollout-"+at.Format("2006-01-02T15-04-05")+"-"+id+".jsonl")
	meta := `{"timestamp":"` + at.UTC().Format(time.RFC3339Nano) + `","type":"session_meta","payload":{"id":"` + id + `","timestamp":"` + at.UTC().Format(time.RFC3339Nano) + `","cwd":"` + cwd + `","base_instructions":{"text":"` + strings.Repeat("long instructions ", 2000) + `"}}}`
	writeFile(t, path, meta+"\n"+`{"type":"event_msg","payload":{"type":"task_started"}}`+"\n")
	return path
}

func TestCodexLocate(t *testing.T) {
	l := testLaunch(t)
	home := filepath.Join(l.home(), ".codex")
	ctx := context.Background()
	start := time.Now().Add(-time.Minute)
	q := Query{ProjectDir: l.ProjectDir, Since: start, Env: l.Env}
	if _, err := Codex.Locate(ctx, q); !errors.Is(err, ErrNoConversation) {
		t.Errorf("no sessions: %v", err)
	}
	// An older conversation and one elsewhere do not count.
	old := time.Now().Add(-48 * time.Hour)
	oldPath := writeRollout(t, home, old, "01a230cd-0000-7000-8000-000000000001", l.ProjectDir)
	os.Chtimes(oldPath, old, old)
	writeRollout(t, home, time.Now(), "01a230cd-0000-7000-8000-000000000002", "/somewhere/else")
	mine := writeRollout(t, home, time.Now(), "01a230cd-0000-7000-8000-000000000003", l.ProjectDir)
	c, err := Codex.Locate(ctx, q)
	if err != nil || c.ID != "01a230cd-0000-7000-8000-000000000003" || c.TranscriptPath != mine {
		t.Errorf("by project: %+v, %v", c, err)
	}
	writeRollout(t, home, time.Now(), "01a230cd-0000-7000-8000-000000000004", l.ProjectDir)
	if _, err := Codex.Locate(ctx, q); !errors.Is(err, ErrAmbiguousConversation) {
		t.Errorf("two in the project: %v", err)
	}
	// By id, wherever its day is.
	q.ConversationID = "01a230cd-0000-7000-8000-000000000001"
	if c, err := Codex.Locate(ctx, q); err != nil || c.TranscriptPath != oldPath {
		t.Errorf("by id: %+v, %v", c, err)
	}
	// A real version 7 id: found in the day its time names.
	v7 := "019a82c4-5b1e-7c3d-8e2f-0123456789ab"
	v7Path := writeRollout(t, home, time.UnixMilli(0x019a82c45b1e), v7, l.ProjectDir)
	q.ConversationID = v7
	if c, err := Codex.Locate(ctx, q); err != nil || c.TranscriptPath != v7Path {
		t.Errorf("by v7 id: %+v, %v", c, err)
	}
	q.ConversationID = "01a230cd-0000-7000-8000-00000000ffff"
	if _, err := Codex.Locate(ctx, q); !errors.Is(err, ErrNoConversation) {
		t.Errorf("unknown id: %v", err)
	}
}

func TestCodexPrepareResume(t *testing.T) {
	l := testLaunch(t, "codex", "exec", "continue")
	const id = "01a230cd-0000-7000-8000-000000000003"
	l.Resume = id
	p, err := Codex.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if p.Resumed || len(p.Notices) != 1 || !strings.Contains(p.Notices[0], "not resumed") {
		t.Errorf("no rollout: plan %+v", p)
	}
	path := writeRollout(t, filepath.Join(l.home(), ".codex"), time.Now(), id, l.ProjectDir)
	p, err = Codex.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Resumed || p.ConversationID != id || p.TranscriptPath != path || !slices.Equal(p.Argv[3:], []string{"exec", "resume", id, "continue"}) {
		t.Errorf("resumed: plan %+v", p)
	}
}

func TestGeneric(t *testing.T) {
	l := testLaunch(t, "aider", "--yes")
	l.Resume = "3f0c0e6a-1111-4222-8333-444455556666"
	p, err := Generic.Prepare(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Argv, l.Argv) || p.Integrated || p.InitialState != StateUnknown || len(p.Notices) != 1 {
		t.Errorf("plan %+v", p)
	}
	if Generic.Transcript("/x", TranscriptOptions{}) != nil || Generic.Interactive([]string{"aider"}) {
		t.Error("generic has a transcript or is interactive")
	}
	if _, err := Generic.Resume(l.Argv, l.Resume); !errors.Is(err, ErrNotResumable) {
		t.Errorf("resume: %v", err)
	}
	if _, err := Generic.Locate(context.Background(), Query{}); !errors.Is(err, ErrNoConversation) {
		t.Errorf("locate: %v", err)
	}
}

func TestPrepareBadLaunch(t *testing.T) {
	for _, a := range []Adapter{ClaudeCode, Codex} {
		good := testLaunch(t, a.Name())
		for name, l := range map[string]Launch{
			"no command":           {SessionDir: good.SessionDir, Sessionctl: good.Sessionctl},
			"relative session dir": {Argv: good.Argv, SessionDir: "state", Sessionctl: good.Sessionctl},
			"relative sessionctl":  {Argv: good.Argv, SessionDir: good.SessionDir, Sessionctl: "sessionctl"},
			"relative project":     {Argv: good.Argv, SessionDir: good.SessionDir, Sessionctl: good.Sessionctl, ProjectDir: "src"},
		} {
			if _, err := a.Prepare(context.Background(), l); !errors.Is(err, ErrBadLaunch) {
				t.Errorf("%s, %s: %v", a.Name(), name, err)
			}
		}
	}
	if _, err := Generic.Prepare(context.Background(), Launch{}); !errors.Is(err, ErrBadLaunch) {
		t.Errorf("generic, no command: %v", err)
	}
}

func TestPrepareUnwritableSessionDir(t *testing.T) {
	l := testLaunch(t, "claude", "-p", "x")
	blocker := filepath.Join(t.TempDir(), "file")
	writeFile(t, blocker, "")
	l.SessionDir = filepath.Join(blocker, "session")
	if _, err := ClaudeCode.Prepare(context.Background(), l); err == nil || !strings.Contains(err.Error(), blocker) {
		t.Errorf("a session dir under a file: %v", err)
	}
}

// FuzzCommandLine gives the adapters arbitrary command lines: Prepare,
// Resume and Interactive never panic, and Prepare keeps the executable.
func FuzzCommandLine(f *testing.F) {
	f.Add("claude\x00-p\x00go on\x00--mcp-config\x00a.json")
	f.Add("claude\x00--resume\x00--\x00-x")
	f.Add("codex\x00exec\x00resume\x00--last\x00-i\x00a.png\x00b.png")
	f.Add("codex\x00-c\x00notify=[\"x\"]\x00e\x00--\x00-y")
	f.Add("claude\x00-p")
	f.Fuzz(func(t *testing.T, line string) {
		argv := strings.Split(line, "\x00")
		dir := t.TempDir()
		l := Launch{Argv: argv, SessionDir: filepath.Join(dir, "s"), Sessionctl: "/bin/sessionctl", ProjectDir: dir, Env: []string{"HOME=" + dir}, MCP: true}
		for _, a := range []Adapter{ClaudeCode, Codex} {
			a.Interactive(argv)
			a.Resume(argv, "3f0c0e6a-1111-4222-8333-444455556666")
			p, err := a.Prepare(context.Background(), l)
			if err != nil {
				continue
			}
			if len(p.Argv) == 0 || p.Argv[0] != argv[0] {
				t.Fatalf("%s: argv %q lost the executable %q", a.Name(), p.Argv, argv[0])
			}
		}
	})
}
