package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tourBlocks returns the shell blocks of the README's five-minute tour,
// each as its lines.
func tourBlocks(t *testing.T) [][]string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i := strings.Index(text, "## A five-minute tour")
	if i < 0 {
		t.Fatal("README.md has no five-minute tour")
	}
	text = text[i:]
	if j := strings.Index(text, "\n### "); j > 0 {
		text = text[:j]
	}
	var blocks [][]string
	for {
		a := strings.Index(text, "```sh\n")
		if a < 0 {
			break
		}
		text = text[a+len("```sh\n"):]
		b := strings.Index(text, "```")
		var lines []string
		for _, l := range strings.Split(text[:b], "\n") {
			if strings.TrimSpace(l) != "" && !strings.HasPrefix(strings.TrimSpace(l), "#") {
				lines = append(lines, l)
			}
		}
		blocks = append(blocks, lines)
		text = text[b+3:]
	}
	if len(blocks) < 4 {
		t.Fatalf("the tour has %d shell blocks, want its 4", len(blocks))
	}
	return blocks
}

// TestReadmeTour runs the README's five-minute tour as written, in a
// shell, against a daemon of its own: every command succeeds. Where the
// tour follows (-f) the command runs 2 s; attach, which takes over a
// person's terminal, is left to the terminal tests. The lines "from
// inside a session" are typed into the tour's own terminal session,
// where sessionctl must be on the PATH of the shell that started it.
func TestReadmeTour(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	proj := filepath.Join(t.TempDir(), "proj")
	blocks := tourBlocks(t)

	var script strings.Builder
	script.WriteString("set -euo pipefail\ntrap 'echo \"tour: failed: $BASH_COMMAND\" >&2' ERR\n")
	for _, block := range blocks[:2] {
		for _, line := range block {
			line = strings.ReplaceAll(line, "/tmp/proj", proj)
			cmd, _, _ := strings.Cut(line, "  #")
			cmd = strings.TrimSpace(cmd)
			switch {
			case cmd == "export PATH=$PWD/bin:$PATH":
				cmd = "export PATH=" + binDir + ":$PATH"
			case strings.Contains(cmd, " -f"):
				cmd = "timeout 2 " + cmd + " || [ $? = 124 ]"
			case strings.HasPrefix(cmd, "sessionctl attach"):
				continue
			}
			script.WriteString("echo \"tour: $ \"" + shellQuote(cmd) + "\n" + cmd + "\n")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Env = append(cleanEnv(), "SESSIOND_SOCKET="+d.sock, "PATH=/usr/local/bin:/usr/bin:/bin")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the tour failed: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "ended interrupted") {
		t.Errorf("the tour's handoff does not tell of the stop:\n%s", out.String())
	}

	// The terminal session runs bash -i; what the agent says from inside
	// it is typed there.
	var id string
	for _, r := range d.list(false) {
		if r.ProjectDir == proj || strings.HasSuffix(r.ProjectDir, "/proj") {
			id = r.ID
		}
	}
	if id == "" {
		t.Fatalf("no live terminal session after the tour:\n%s", d.mustCtl("ps", "--all"))
	}
	for _, line := range blocks[2] {
		cmd, _, _ := strings.Cut(line, "  #")
		d.mustCtl("send", id, strings.TrimSpace(cmd)+"; echo tour-exit=$?", "--enter")
	}
	waitFor(t, 15*time.Second, "the report and remaining typed in the session", func() (bool, string) {
		screen := d.mustCtl("screen", id)
		return strings.Count(screen, "tour-exit=0") >= len(blocks[2]) && strings.Contains(screen, "left"), screen
	})

	// The API, as the tour calls it.
	for _, line := range blocks[3] {
		r := execute(t, append(cleanEnv(), "SESSIOND_SOCKET="+d.sock, "PATH="+binDir+":/usr/local/bin:/usr/bin:/bin"), "bash", "-c", line)
		if r.code != 0 || !strings.Contains(r.stdout, id) {
			t.Errorf("%s:\n%s", line, r)
		}
	}
	d.mustCtl("stop", id)
	state := d.mustCtl("state", proj)
	if !strings.Contains(state, "Completed Task #27") || !strings.Contains(state, "Fix JWT validation") {
		t.Errorf("the report from inside the session is not in the state:\n%s", state)
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
