package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// reportLoop is a session command that reports in a loop as fast as it
// can; with exitAfter > 0 it exits on its own after that many reports. With
// slowStop it goes on reporting for a while after SIGTERM, as an agent
// writing its last words does, so that reports are in flight while the
// session ends (and a daemon killed during a stop meets ends in every phase).
func reportLoop(t *testing.T, dir string, exitAfter int, slowStop bool) string {
	t.Helper()
	trap := ""
	if slowStop {
		trap = "trap 'last=$((n+8))' TERM\n"
	}
	return script(t, dir, "agent.sh", fmt.Sprintf(`%sn=0
last=0
while :; do
  n=$((n+1))
  %s report --summary "report $n" --progress $((n %% 100)) --task "task $n" >/dev/null 2>&1
  if [ %d -gt 0 ] && [ $n -ge %d ]; then exit 0; fi
  if [ $last -gt 0 ] && [ $n -ge $last ]; then exit 0; fi
done
`, trap, sessionctlBin, exitAfter, exitAfter))
}

// progressEntries counts the progress-log entries of session id in a project.
func progressEntries(t *testing.T, dir, id string) int {
	t.Helper()
	per, _ := progressLog(dir)
	return per[id]
}

// archivedHandoff reads the handoff archive of a session in the state dir.
func archivedHandoff(t *testing.T, stateDir, id string) (endReason string, ok bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(stateDir, "sessions", id, "handoff.json"))
	if err != nil {
		return "", false
	}
	var h struct {
		SessionID string `json:"session_id"`
		EndReason string `json:"end_reason"`
	}
	if err := json.Unmarshal(data, &h); err != nil || h.SessionID != id {
		t.Errorf("handoff archive of %s: %v (session %q)", id, err, h.SessionID)
	}
	return h.EndReason, true
}

// TestOneWriterUnderConcurrentRequests drives many sessions whose agents
// report in a loop while checkpoints, extends, signals, ps and inspect run
// against them, and they are stopped, exit on their own, or the daemon
// shuts down. The record on disk always tells the end the API tells, and a
// restarted daemon ends nothing a second time.
func TestOneWriterUnderConcurrentRequests(t *testing.T) {
	d := startDaemon(t)
	const n = 24
	type sess struct {
		id, dir string
		group   int // 0: stopped, 1: exits on its own, 2: ended by the daemon's shutdown
	}
	var all []sess
	for i := range n {
		dir := project(t)
		g := i % 3
		exitAfter := 0
		if g == 1 {
			exitAfter = 15
		}
		id := d.start("--checkpoint", "", "--timeout", "1h", dir, "--", reportLoop(t, dir, exitAfter, g != 1))
		all = append(all, sess{id, dir, g})
	}

	// Requests from every side while the agents report.
	stopLoad := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for {
				select {
				case <-stopLoad:
					return
				default:
				}
				s := all[rng.IntN(len(all))]
				var r result
				switch rng.IntN(5) {
				case 0:
					r = runCtl(t, d.sock, nil, "checkpoint", s.id)
				case 1:
					r = runCtl(t, d.sock, nil, "extend", s.id, "1m")
				case 2:
					r = runCtl(t, d.sock, nil, "kill", "-s", "SIGWINCH", s.id)
				case 3:
					r = runCtl(t, d.sock, nil, "ps", "-a")
				case 4:
					r = runCtl(t, d.sock, nil, "inspect", s.id)
				}
				// A request that reaches a session as it ends is refused
				// with a conflict (exit 1); nothing else may fail.
				if r.code != 0 && !strings.Contains(r.stderr, "has ended") && !strings.Contains(r.stderr, "stopping") && !strings.Contains(r.stderr, "ending") {
					t.Errorf("request failed:\n%s", r)
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)

	// Group 0: stopped while everything runs, reports from outside the
	// session too (as root may send them) in flight. When stop returns, the
	// record on disk says ended, with the end the API reports.
	var stops sync.WaitGroup
	stopReports := make(chan struct{})
	var reporters sync.WaitGroup
	for _, s := range all {
		if s.group != 0 {
			continue
		}
		for range 2 {
			reporters.Add(1)
			go func() {
				defer reporters.Done()
				for i := 0; ; i++ {
					select {
					case <-stopReports:
						return
					default:
					}
					runCtl(t, d.sock, nil, "report", "--session", s.id, "--summary", fmt.Sprintf("outside %d", i))
				}
			}()
		}
		stops.Add(1)
		go func() {
			defer stops.Done()
			r := runCtl(t, d.sock, nil, "--json", "stop", s.id)
			if r.code != 0 {
				t.Errorf("stop %s:\n%s", s.id, r)
				return
			}
			var got []record
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 1 {
				t.Errorf("stop --json of %s: %v\n%s", s.id, err, r.stdout)
				return
			}
			disk, _ := d.readRecordFile(s.id)
			if disk.State != "ended" || disk.EndReason != got[0].EndReason || disk.EndedAt == nil {
				t.Errorf("after stop returned, %s on disk is %s/%s, the API said %s/%s", s.id, disk.State, disk.EndReason, got[0].State, got[0].EndReason)
			}
		}()
	}
	stops.Wait()
	close(stopReports)
	reporters.Wait()
	// Group 1 exits on its own.
	for _, s := range all {
		if s.group == 1 {
			if rec := d.waitEnded(s.id, 30*time.Second); rec.EndReason != "complete" {
				t.Errorf("%s ended %s, want complete", s.id, rec.EndReason)
			}
		}
	}
	close(stopLoad)
	wg.Wait()
	// Group 2 ends with the daemon.
	if code := d.stop(); code != 0 {
		t.Errorf("sessiond exited %d on SIGTERM", code)
	}
	for _, s := range all {
		disk, _ := d.readRecordFile(s.id)
		if disk.State != "ended" {
			t.Errorf("%s (group %d) is %s on disk after shutdown", s.id, s.group, disk.State)
		}
		if s.group == 2 && disk.EndReason != "interrupted" {
			t.Errorf("%s ended %s at shutdown, want interrupted", s.id, disk.EndReason)
		}
	}

	// A new daemon on the same state ends nothing again.
	d2 := startDaemonAt(t, d.stateDir, d.sock)
	for _, s := range all {
		rec := d2.inspect(s.id)
		if rec.State != "ended" || rec.EndReason == "crashed" {
			t.Errorf("%s after restart: %s/%s", s.id, rec.State, rec.EndReason)
		}
		if got := progressEntries(t, s.dir, s.id); got != 1 {
			t.Errorf("%s has %d progress entries, want 1", s.id, got)
		}
		if reason, ok := archivedHandoff(t, d.stateDir, s.id); !ok || reason != rec.EndReason {
			t.Errorf("%s: handoff archive says %q (found %v), the record %q", s.id, reason, ok, rec.EndReason)
		}
	}
}

// TestKill9DuringStopsEndsEachSessionOnce kills the daemon with SIGKILL while
// it stops every session. The next daemon adopts those still alive,
// finishes the ends that were recorded, and ends the others as crashed:
// every session ends exactly once, with one handoff archive and one
// progress entry.
func TestKill9DuringStopsEndsEachSessionOnce(t *testing.T) {
	d := startDaemon(t)
	const n = 16
	ids := map[string]string{}
	for range n {
		dir := project(t)
		id := d.start("--checkpoint", "", "--stop-grace", "5s", dir, "--", reportLoop(t, dir, 0, true))
		ids[id] = dir
	}
	time.Sleep(500 * time.Millisecond)
	stopAll := startCtlAsync(t, d.sock, "stop", "--all")
	time.Sleep(time.Duration(150+rand.IntN(300)) * time.Millisecond)
	d.kill9()
	stopAll.wait()

	d2 := startDaemonAt(t, d.stateDir, d.sock)
	d2.mustCtl("stop", "--all")
	for id, dir := range ids {
		rec := d2.waitEnded(id, 30*time.Second)
		if got := progressEntries(t, dir, id); got != 1 {
			t.Errorf("%s (%s) has %d progress entries, want 1", id, rec.EndReason, got)
		}
		if reason, ok := archivedHandoff(t, d.stateDir, id); !ok || reason != rec.EndReason {
			t.Errorf("%s: handoff archive says %q (found %v), the record %q", id, reason, ok, rec.EndReason)
		}
		if data, err := os.ReadFile(filepath.Join(dir, ".sessiond", "handoff.json")); err != nil || !strings.Contains(string(data), id) {
			t.Errorf("%s: project handoff missing or another session's: %v", id, err)
		}
	}
	// And once more: a third daemon finds nothing to end.
	d2.stop()
	d3 := startDaemonAt(t, d.stateDir, d.sock)
	for id, dir := range ids {
		if rec := d3.inspect(id); rec.State != "ended" {
			t.Errorf("%s is %s after a clean restart", id, rec.State)
		}
		if got := progressEntries(t, dir, id); got != 1 {
			t.Errorf("%s has %d progress entries after a clean restart, want 1", id, got)
		}
	}
}

// asyncCtl is a sessionctl run in the background.
type asyncCtl struct {
	done chan result
}

// startCtlAsync runs sessionctl in the background; wait returns its result.
func startCtlAsync(t *testing.T, sock string, args ...string) *asyncCtl {
	t.Helper()
	a := &asyncCtl{done: make(chan result, 1)}
	go func() { a.done <- runCtl(t, sock, nil, args...) }()
	return a
}

func (a *asyncCtl) wait() result { return <-a.done }
