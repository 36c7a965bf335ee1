package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ctlProcess is a sessionctl run in the background.
type ctlProcess struct {
	done chan struct{} // closed once it has exited
	err  error         // how it exited, once done is closed
}

// background runs sessionctl args against d in the background, its
// output into stdout and stderr; the test's end kills it.
func (d *daemon) background(t *testing.T, stdout, stderr io.Writer, args ...string) *ctlProcess {
	t.Helper()
	cmd := exec.Command(sessionctlBin, append([]string{"--socket", d.sock}, args...)...)
	cmd.Env = cleanEnv()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &ctlProcess{done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

// TestFollowersOutlastAStopOfMany: a stop of hundreds of sessions
// publishes their stopping and ended events within a second. A follower
// that reads none of them meanwhile (events -f writing into a pipe nobody
// reads yet) still gets every one, in order, once it reads; a start --wait
// of another session goes on waiting through the burst and ends with its
// own session.
func TestFollowersOutlastAStopOfMany(t *testing.T) {
	t.Parallel()
	const n = 400
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), newSocketPath(t),
		"max_sessions = 1000\n[defaults]\ncheckpoint = \"\"\n")

	// The follower: its output goes into a pipe read only to see that it
	// follows, then not again until the stop is over.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var followerErr syncBuffer
	d.background(t, pw, &followerErr, "events", "-f", "--json")
	pw.Close()
	t.Cleanup(func() { pr.Close() })
	lines := bufio.NewReaderSize(pr, 1<<20)
	type event struct {
		Type      string `json:"type"`
		SessionID string `json:"session_id"`
	}
	next := func() (event, bool) {
		line, err := lines.ReadBytes('\n')
		if err != nil {
			return event{}, false
		}
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("events -f printed %q: %v", line, err)
		}
		return ev, true
	}
	// A session started after the follower, whose started event proves
	// the subscription live (the first may come before it).
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		for {
			ev, ok := next()
			if !ok || ev.Type == "started" {
				return
			}
		}
	}()
	deadline := time.After(10 * time.Second)
	for live := false; !live; {
		probe := d.start(project(t), "--", "sleep", "1000")
		t.Cleanup(func() { d.ctl("stop", probe) })
		select {
		case <-followed:
			live = true
		case <-time.After(300 * time.Millisecond):
		case <-deadline:
			t.Fatalf("events -f showed no started event: %s", followerErr.String())
		}
	}

	// The waiter, on a session of its own.
	var waitOut, waitErr syncBuffer
	waiter := d.background(t, &waitOut, &waitErr, "start", "--wait", "--name", "waited", project(t), "--", "sleep", "1000")
	waitFor(t, 10*time.Second, "the waited session to run", func() (bool, string) {
		r := d.ctl("inspect", "--json", "waited")
		return r.code == 0 && strings.Contains(r.stdout, `"state": "running"`), r.String()
	})

	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = project(t)
	}
	ids := strings.Fields(d.mustCtl(append(append([]string{"start", "-q"}, dirs...), "--", "sleep", "1000")...))
	if len(ids) != n {
		t.Fatalf("started %d sessions, want %d", len(ids), n)
	}
	d.mustCtl(append([]string{"stop"}, ids...)...)

	select {
	case <-waiter.done:
		t.Fatalf("start --wait ended during the others' stop (%v):\nstdout: %s\nstderr: %s", waiter.err, waitOut.String(), waitErr.String())
	default:
	}

	// Every one of the stopped sessions' events reached the follower,
	// each session's stopping before its ended.
	stopping, ended := map[string]bool{}, map[string]bool{}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	got := make(chan string, 1)
	go func() {
		for len(ended) < n {
			ev, ok := next()
			if !ok {
				got <- "the stream ended: " + followerErr.String()
				return
			}
			switch {
			case ev.Type == "missed":
				got <- "a missed event"
				return
			case !want[ev.SessionID]:
			case ev.Type == "stopping":
				stopping[ev.SessionID] = true
			case ev.Type == "ended":
				if !stopping[ev.SessionID] {
					got <- "session " + ev.SessionID + " ended before its stopping event"
					return
				}
				ended[ev.SessionID] = true
			}
		}
		got <- ""
	}()
	select {
	case why := <-got:
		if why != "" {
			t.Fatalf("events -f after the stop: %s (%d of %d ended events read)", why, len(ended), n)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("events -f did not give every ended event within 60s")
	}

	// The waiter ends with its own session.
	d.mustCtl("stop", "waited")
	select {
	case <-waiter.done:
		if !strings.Contains(waitErr.String(), "ended") {
			t.Errorf("start --wait after its session's stop: stderr %q, want its end", waitErr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("start --wait did not end with its session")
	}
}

// TestFollowerToldOfTheDaemonsEnd: events -f whose stream the daemon's
// shutdown ends says so and fails, after the events before it.
func TestFollowerToldOfTheDaemonsEnd(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	var out, errb syncBuffer
	follower := d.background(t, &out, &errb, "events", "-f")
	waitFor(t, 10*time.Second, "events -f to show a session's start", func() (bool, string) {
		if strings.Contains(out.String(), "started") {
			return true, ""
		}
		d.start(project(t), "--", "sleep", "1000")
		return false, out.String()
	})
	d.stop()
	select {
	case <-follower.done:
	case <-time.After(30 * time.Second):
		t.Fatal("events -f outlived the daemon")
	}
	if exitCode(follower.err) == 0 || !strings.Contains(errb.String(), "the event stream ended") {
		t.Errorf("events -f after the daemon's shutdown: exit %d, stderr %q; want a failure that says the stream ended", exitCode(follower.err), errb.String())
	}
	if !strings.Contains(out.String(), "stopping") {
		t.Errorf("events -f should show the shutdown's stopping events before its end:\n%s", out.String())
	}
}
