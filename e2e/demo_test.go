package e2e

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDemoPiped runs make demo's script with its output piped, as CI and
// a `make demo | less` do: plain text, and a handoff excerpt of whole
// fields.
func TestDemoPiped(t *testing.T) {
	t.Parallel()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	env := append(cleanEnv(), "SESSIOND_BIN="+filepath.Dir(sessionctlBin), "TMPDIR="+t.TempDir())
	r := execute(t, env, "bash", filepath.Join(root, "docs", "demo", "run.sh"))
	if r.code != 0 {
		t.Fatalf("the demo failed:\n%s", r)
	}
	if strings.Contains(r.stdout, "\x1b") {
		t.Errorf("the demo printed escape codes into a pipe:\n%q", r.stdout)
	}
	i := strings.Index(r.stdout, "$ sessionctl handoff .")
	j := strings.Index(r.stdout, "== The progress log")
	if i < 0 || j < i {
		t.Fatalf("no handoff excerpt:\n%s", r.stdout)
	}
	excerpt := r.stdout[i:j]
	keys := regexp.MustCompile(`(?m)^  "([a-z_]+)":`).FindAllStringSubmatch(excerpt, -1)
	var got []string
	for _, k := range keys {
		got = append(got, k[1])
	}
	want := "end_reason exit_code signal task_attempted task_status current_step total_steps recommended_next_steps warnings last_file_edited"
	if strings.Join(got, " ") != want {
		t.Errorf("handoff excerpt keys = %v, want %s:\n%s", got, want, excerpt)
	}
	// Whole fields: every array that opens closes, and nothing of the
	// command, the files or the log tail leaks in.
	if strings.Count(excerpt, "[") != strings.Count(excerpt, "]") || strings.Contains(excerpt, "agent.sh") || strings.Contains(excerpt, "  | ") {
		t.Errorf("handoff excerpt is not whole fields:\n%s", excerpt)
	}
}
