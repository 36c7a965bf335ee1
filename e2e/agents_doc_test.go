package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sessiond/sessiond/daemon/agent/agenttest"
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
// docs/agents.md as a user would paste it, with stand-ins for the agents:
// the agent must get the context of the session it runs in, read when it
// runs — not the previous session's, expanded by the user's shell before
// the start. Claude Code (the stand-in of daemon/agent) gets it at its
// SessionStart hook; Codex, here a script that records its prompt, in
// its prompt.
func TestAgentRecipesReadTheirOwnContext(t *testing.T) {
	t.Parallel()
	// What went wrong is said after the daemon's log, which a failure
	// dumps: the end of the output is what is read first.
	var wrong []string
	t.Cleanup(func() {
		for _, w := range wrong {
			t.Error(w)
		}
	})
	fail := func(format string, args ...any) {
		t.Helper()
		wrong = append(wrong, fmt.Sprintf(format, args...))
		t.Fail()
	}
	d := startDaemon(t)
	stand := t.TempDir()
	script(t, stand, "codex", `printf '%s\n' "$@" > "$SESSIOND_PROJECT_DIR/prompt.txt"`+"\n")
	agents := agenttest.Build(t)
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
		log := filepath.Join(t.TempDir(), "agent.log")

		// The agent runs in the daemon's environment: the stand-ins come first
		// on its PATH there.
		path := stand + ":" + agents + ":" + binDir + ":/usr/bin:/bin"
		flags := "--checkpoint '' --env PATH=" + path + " --env HOME=" + home + " --env FAKEAGENT_LOG=" + log + " "
		cmd := exec.Command("sh", "-c", strings.Replace(recipe, "sessionctl start ", "sessionctl --socket "+d.sock+" start -q "+flags, 1))
		cmd.Env = append(cleanEnv(), "HOME="+home, "PATH="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			fail("recipe %d: %s\n%v\n%s", i, recipe, err, out)
			return
		}
		id := strings.TrimSpace(string(out))
		d.waitEnded(id, 20*time.Second)
		var told string
		if strings.Contains(recipe, "-- claude ") {
			for _, e := range agenttest.Find(agenttest.ReadLog(t, log), "context") {
				told += e.Text
			}
		} else {
			prompt, err := os.ReadFile(filepath.Join(dir, "prompt.txt"))
			if err != nil {
				fail("recipe %d did not run its agent: %v\n%s", i, err, recipe)
				continue
			}
			told = string(prompt)
		}
		if !strings.Contains(told, "Session `"+id+"`") {
			fail("the agent was told:\n%s\nrecipe %d: that is not the context of its own session %s (the previous one was %s); it names %q",
				told, i, id, prev, regexp.MustCompile("Session `[^`]*`").FindAllString(told, -1))
		}
		if regexp.MustCompile("Session `"+prev+"`").MatchString(told) && !strings.Contains(told, "Previous session") {
			fail("the agent was told:\n%s\nrecipe %d: that is the previous session's context (%s)", told, i, prev)
		}
	}
}
