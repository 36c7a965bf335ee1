package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// concurrentProject is a project whose sessions may run side by side.
func concurrentProject(t *testing.T) string {
	t.Helper()
	dir := project(t)
	writeFile(t, filepath.Join(dir, "sessiond.toml"), "[session]\nconcurrent = true\ncheckpoint = \"\"\n")
	return dir
}

// checkEntries fails unless each of ids has exactly one progress entry
// and there are no others.
func checkEntries(t *testing.T, dir string, ids []string) {
	t.Helper()
	per, total := progressLog(dir)
	for _, id := range ids {
		if per[id] != 1 {
			t.Errorf("session %s has %d progress entries, want 1", id, per[id])
		}
	}
	if total != len(ids) {
		t.Errorf("%d progress entries, want %d", total, len(ids))
	}
}

// TestConcurrentEndsKeepEveryEntry: 200 sessions of one project stopped
// together leave 200 entries in its progress log, each once.
func TestConcurrentEndsKeepEveryEntry(t *testing.T) {
	d := startDaemon(t)
	dir := concurrentProject(t)
	r := d.ctl("start", "-q", "--count", "200", dir, "--", "sleep", "300")
	if r.code != 0 {
		t.Fatal(r)
	}
	ids := strings.Fields(r.stdout)
	if len(ids) != 200 {
		t.Fatalf("started %d sessions, want 200", len(ids))
	}
	began := time.Now()
	if r := d.ctl("stop", "--all"); r.code != 0 {
		t.Fatal(r)
	}
	t.Logf("200 ends of one project: %s", time.Since(began).Round(time.Millisecond))
	checkEntries(t, dir, ids)
	// The state the next session gets says the same.
	if r := d.ctl("state", dir); r.code != 0 || !strings.Contains(r.stdout, "Last Session") {
		t.Errorf("sessionctl state: %s", r)
	}
}

// TestConcurrentEndsAcrossACrash: the same, the daemon killed with
// SIGKILL while the ends are being written; the next daemon finishes them,
// and still each session has one entry.
func TestConcurrentEndsAcrossACrash(t *testing.T) {
	d := startDaemon(t)
	dir := concurrentProject(t)
	r := d.ctl("start", "-q", "--count", "200", dir, "--", "sleep", "300")
	if r.code != 0 {
		t.Fatal(r)
	}
	ids := strings.Fields(r.stdout)
	stopped := make(chan result, 1)
	go func() { stopped <- runCtl(t, d.sock, nil, "stop", "--all") }()
	// Kill it once some ends are on disk, not all.
	waitFor(t, 30*time.Second, "the first ends on disk", func() (bool, string) {
		per, _ := progressLog(dir)
		return len(per) >= 1, fmt.Sprint(len(per))
	})
	d.kill9()
	<-stopped
	per, _ := progressLog(dir)
	t.Logf("%d of 200 entries written when the daemon was killed", len(per))
	d2 := startDaemonAt(t, d.stateDir, d.sock)
	waitFor(t, 60*time.Second, "every session to end", func() (bool, string) {
		r := d2.ctl("ps", "-q")
		return r.code == 0 && strings.TrimSpace(r.stdout) == "", r.String()
	})
	checkEntries(t, dir, ids)
}

// progressLog counts, per session id, the entries of the project's
// progress log, and the entries in all (nil, 0 while there is no log).
func progressLog(dir string) (map[string]int, int) {
	b, err := os.ReadFile(filepath.Join(dir, ".sessiond", "progress.md"))
	if err != nil {
		return nil, 0
	}
	per := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Session "); ok {
			id, _, _ := strings.Cut(rest, ",")
			per[id]++
		}
	}
	return per, strings.Count(string(b), "\n## Session ")
}
