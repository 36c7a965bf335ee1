package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// docRecipes returns the `sessionctl start` lines of docs/agents.md's sh
// blocks: the recipes a user copies.
func docRecipes(t *testing.T) []string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "docs", "agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in && strings.HasPrefix(line, "sessionctl start "):
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		t.Fatal("docs/agents.md has no sessionctl start recipe")
	}
	return out
}

// TestAgentRecipesReadTheirOwnContext runs each start recipe of
// docs/agents.md as a user would paste it, with stand-ins for the agents
// that record their prompt: the prompt must hold the context of the
// session the agent runs in, read when it runs — not the previous
// session's, expanded by the user's shell before the start.
func TestAgentRecipesReadTheirOwnContext(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	stand := t.TempDir()
	for _, name := range []string{"claude", "codex"} {
		script(t, stand, name, `printf '%s\n' "$@" > "$SESSIOND_PROJECT_DIR/prompt.txt"`+"\n")
	}
	home := t.TempDir()
	for i, recipe := range docRecipes(t) {
		dir := filepath.Join(home, "src", "app")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// A previous session, so that a context expanded too early would
		// show another session's id.
		prev := d.start("--checkpoint", "", dir, "--", "true")
		d.waitEnded(prev, 10*time.Second)
		_ = os.Remove(filepath.Join(dir, "prompt.txt"))

		// The agent runs in the daemon's environment: the stand-ins come first
		// on its PATH there.
		path := stand + ":" + binDir + ":/usr/bin:/bin"
		cmd := exec.Command("sh", "-c", strings.Replace(recipe, "sessionctl start ", "sessionctl --socket "+d.sock+" start -q --checkpoint '' --env PATH="+path+" ", 1))
		cmd.Env = append(cleanEnv(), "HOME="+home, "PATH="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("recipe %d: %s\n%v\n%s", i, recipe, err, out)
		}
		id := strings.TrimSpace(string(out))
		d.waitEnded(id, 10*time.Second)
		prompt, err := os.ReadFile(filepath.Join(dir, "prompt.txt"))
		if err != nil {
			t.Fatalf("recipe %d did not run its agent: %v\n%s", i, err, recipe)
		}
		if !strings.Contains(string(prompt), "Session `"+id+"`") {
			t.Errorf("recipe %d: the agent's prompt is not its own session's context (%s):\n%s", i, id, prompt)
		}
		if regexp.MustCompile("Session `"+prev+"`").Match(prompt) && !strings.Contains(string(prompt), "Previous session") {
			t.Errorf("recipe %d: the prompt holds the previous session's context", i)
		}
	}
}
