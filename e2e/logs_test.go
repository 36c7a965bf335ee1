package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// stampRE is a line's time as logs --timestamps prints it: RFC 3339 in UTC,
// nanoseconds, fixed width (docker's format).
var stampRE = regexp.MustCompile(`(?m)^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z) `)

// gate is a FIFO that a session's command reads from: the command waits
// at `read < gate` until the test opens it.
type gate string

func newGate(t *testing.T, dir, name string) gate {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return gate(p)
}

// open lets the command waiting on the gate go on.
func (g gate) open(t *testing.T) {
	t.Helper()
	var f *os.File
	// A non-blocking open for writing fails until the reader is there.
	waitFor(t, 10*time.Second, "the command to wait at "+string(g), func() (bool, string) {
		var err error
		f, err = os.OpenFile(string(g), os.O_WRONLY|syscall.O_NONBLOCK, 0)
		return err == nil, fmt.Sprint(err)
	})
	f.Write([]byte("go\n"))
	f.Close()
}

// logTimes returns the times logs --timestamps printed.
func logTimes(t *testing.T, out string) []time.Time {
	t.Helper()
	var ts []time.Time
	for _, m := range stampRE.FindAllStringSubmatch(out, -1) {
		v, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, v)
	}
	return ts
}

// transcript runs sessionctl commands and writes each with what it
// printed, times and ids replaced, for a golden file.
type transcript struct {
	d     *daemon
	b     strings.Builder
	names map[string]string // literal argument -> the name the transcript shows
}

func (tr *transcript) run(args ...string) result {
	tr.d.t.Helper()
	r := tr.d.ctl(args...)
	shown := make([]string, len(args))
	for i, a := range args {
		if n, ok := tr.names[a]; ok {
			a = n
		}
		shown[i] = a
	}
	fmt.Fprintf(&tr.b, "$ sessionctl %s\n", strings.Join(shown, " "))
	tr.b.WriteString(tr.clean(r.stdout))
	if r.stderr != "" {
		tr.b.WriteString("[stderr] " + tr.clean(r.stderr))
	}
	fmt.Fprintf(&tr.b, "[exit %d]\n", r.code)
	return r
}

func (tr *transcript) clean(s string) string {
	s = stampRE.ReplaceAllString(s, "TIME ")
	for lit, name := range tr.names {
		s = strings.ReplaceAll(s, lit, name)
	}
	return s
}

// TestLogsTimestampsSinceUntil: lines carry the time they were written,
// --since and --until select by it, with durations and RFC 3339 times, and
// bad values are usage errors found before any request.
func TestLogsTimestampsSinceUntil(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	g1, g2, g3 := newGate(t, dir, "g1"), newGate(t, dir, "g2"), newGate(t, dir, "g3")
	run := script(t, dir, "run.sh", `echo first
read < g1
echo second
read < g2
printf 'thi'
read < g3
echo rd
sleep 100
`)
	id := d.start("--checkpoint", "", dir, "--", run)
	waitLog := func(want string) {
		t.Helper()
		waitFor(t, 10*time.Second, "log line "+want, func() (bool, string) {
			out := d.mustCtl("logs", id)
			return strings.Contains(out, want), out
		})
	}
	// A line has its time once the daemon has seen it (a reader that
	// gets to it first sees, and stamps, it then).
	waitStamped := func(line string) {
		t.Helper()
		waitFor(t, 10*time.Second, "a time for "+line, func() (bool, string) {
			out := d.mustCtl("logs", "-t", id)
			return regexp.MustCompile(`(?m)^\S+Z ` + line + `$`).MatchString(out), out
		})
	}
	waitStamped("first")
	mid1 := time.Now().UTC()
	g1.open(t)
	waitStamped("second")
	mid2 := time.Now().UTC()
	g2.open(t)
	waitLog("thi")
	g3.open(t)
	waitLog("third\n")

	// Follow with times: a line written while following comes with its own.
	tr := &transcript{d: d, names: map[string]string{
		id: "ID", mid1.Format(time.RFC3339Nano): "MID1", mid2.Format(time.RFC3339Nano): "MID2",
	}}
	all := tr.run("logs", "-t", id)
	times := logTimes(t, all.stdout)
	if len(times) != 3 || !times[0].Before(mid1) || !mid1.Before(times[1]) || !times[1].Before(mid2) || !mid2.Before(times[2]) {
		t.Errorf("times %v; want first < %v < second < %v < third", times, mid1, mid2)
	}
	tr.run("logs", "--since", mid1.Format(time.RFC3339Nano), id)
	tr.run("logs", "-t", "--until", mid1.Format(time.RFC3339Nano), id)
	tr.run("logs", "--since", mid1.Format(time.RFC3339Nano), "--until", mid2.Format(time.RFC3339Nano), id)
	tr.run("logs", "-n", "1", "--since", "1h", id)
	tr.run("logs", "--until", "1h", id)
	tr.run("logs", "--since", "abc", id)
	tr.run("logs", "--until", "-5m", id)
	tr.run("logs", "--since", "10m", "--until", "1h", id)
	tr.run("logs", "--since", "2024-13-01T00:00:00Z", id)
	golden(t, "logs-times.txt", tr.b.String())
}

// TestLogsFollowTimestamps: -f -t prints each new line with its time as it
// comes; -f --until ends once the clock passes the time.
func TestLogsFollowTimestamps(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	g := newGate(t, dir, "g")
	run := script(t, dir, "run.sh", "echo before\nread < g\necho after\nsleep 100\n")
	id := d.start("--checkpoint", "", dir, "--", run)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, sessionctlBin, "--socket", d.sock, "logs", "-f", "-t", id)
	cmd.Env = cleanEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	lines := make(chan string, 10)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() string {
		select {
		case l := <-lines:
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("logs -f printed nothing within 10s")
			return ""
		}
	}
	if l := next(); !stampRE.MatchString(l+"\n") || !strings.HasSuffix(l, " before") {
		t.Errorf("first line followed: %q", l)
	}
	opened := time.Now()
	g.open(t)
	l := next()
	if !strings.HasSuffix(l, " after") {
		t.Fatalf("second line followed: %q", l)
	}
	if ts := logTimes(t, l+"\n"); len(ts) != 1 || ts[0].Before(opened.Add(-time.Millisecond)) {
		t.Errorf("a line written while following has time %v, before its gate opened at %v", ts, opened)
	}
	cancel()
	wg.Wait()
	_ = cmd.Wait()

	// --until a moment ahead: the follower stops by itself then.
	until := time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano)
	r := d.ctl("logs", "-f", "--until", until, id)
	if r.code != 0 || r.stdout != "before\nafter\n" {
		t.Errorf("logs -f --until:\n%s", r)
	}
}

// TestLogsTimesAcrossRotationAndRestart: a log rotated across several
// files keeps each line's time, and so does a daemon restart; since works
// across the files.
func TestLogsTimesAcrossRotationAndRestart(t *testing.T) {
	t.Parallel()
	cfg := "log_max_size = \"4KiB\"\nlog_keep = 4\n[defaults]\ncheckpoint = \"\"\n"
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), newSocketPath(t), cfg)
	dir := project(t)
	g := newGate(t, dir, "g")
	// 100 lines of 64 bytes, then the gate, then 100 more: over three files.
	run := script(t, dir, "run.sh", `for i in $(seq 0 99); do printf '%063d\n' $i; done
read < g
for i in $(seq 100 199); do printf '%063d\n' $i; done
sleep 100
`)
	id := d.start(dir, "--", run)
	// Stamped once seen: by the daemon's watcher, or by this reader.
	waitFor(t, 10*time.Second, "the first 100 lines, with their times", func() (bool, string) {
		out := d.mustCtl("logs", "-t", "-n", "1", id)
		return stampRE.MatchString(out) && strings.HasSuffix(out, "99\n"), out
	})
	mid := time.Now().UTC()
	g.open(t)
	waitFor(t, 10*time.Second, "the last line", func() (bool, string) {
		out := d.mustCtl("logs", "-n", "1", id)
		return strings.HasSuffix(out, "199\n"), out
	})
	check := func(when string) {
		t.Helper()
		waitFor(t, 10*time.Second, "the log rotated into files", func() (bool, string) {
			return fileExists(filepath.Join(d.stateDir, "sessions", id, "output.log.2")), ""
		})
		out := d.mustCtl("logs", "-t", id)
		times := logTimes(t, out)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(times) != len(lines) || len(lines) < 100 {
			t.Fatalf("%s: %d lines, %d with times:\n%s", when, len(lines), len(times), out)
		}
		for i, l := range lines {
			n := strings.TrimLeft(strings.Fields(l)[1], "0")
			after := n != "" && len(n) >= 3 // lines 100 to 199
			if after != times[i].After(mid) {
				t.Fatalf("%s: line %q has time %v; the gate opened at %v", when, l, times[i], mid)
			}
		}
		since := d.mustCtl("logs", "--since", mid.Format(time.RFC3339Nano), id)
		if got := strings.Count(since, "\n"); got != 100 || !strings.HasPrefix(since, fmt.Sprintf("%063d\n", 100)) {
			t.Errorf("%s: --since the gate: %d lines from %.70q", when, got, since)
		}
	}
	check("live")
	d.stop()
	d = startDaemonWith(t, d.stateDir, d.sock, cfg)
	check("after a daemon restart")
}

// TestLogsWithoutStamps: a session whose log predates its times prints its
// lines without them and says so; --since cannot select in it. A live one
// adopted from such a daemon gets times for what comes next.
func TestLogsWithoutStamps(t *testing.T) {
	t.Parallel()
	cfg := "on_shutdown = \"leave\"\n[defaults]\ncheckpoint = \"\"\n"
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), newSocketPath(t), cfg)
	dir := project(t)
	ended := d.start(dir, "--", "sh", "-c", "echo old one; echo old two")
	d.waitEnded(ended, 10*time.Second)
	live := project(t)
	g := newGate(t, live, "g")
	run := script(t, live, "run.sh", "echo early\nread < g\necho late\nsleep 100\n")
	id := d.start(live, "--", run)
	waitFor(t, 10*time.Second, "early", func() (bool, string) {
		out := d.mustCtl("logs", id)
		return out == "early\n", out
	})
	pid := d.inspect(id).PID
	killOnCleanup(t, pid)
	d.stop()
	// As an older daemon would have left them: no stamp files.
	for _, s := range []string{ended, id} {
		if err := os.Remove(filepath.Join(d.stateDir, "sessions", s, "output.log.stamps")); err != nil {
			t.Fatal(err)
		}
	}
	d = startDaemonWith(t, d.stateDir, d.sock, cfg)
	d.waitState(id, 10*time.Second, "running")
	g.open(t)
	waitFor(t, 10*time.Second, "late", func() (bool, string) {
		out := d.mustCtl("logs", id)
		return strings.HasSuffix(out, "late\n"), out
	})
	tr := &transcript{d: d, names: map[string]string{ended: "ENDED", id: "LIVE"}}
	tr.run("logs", "-t", ended)
	tr.run("logs", "--since", "1h", ended)
	tr.run("logs", "-t", id)
	tr.run("logs", "--since", "1h", id)
	golden(t, "logs-no-stamps.txt", tr.b.String())
	d.mustCtl("stop", id)
}

// TestLogsFollowAcrossTheDaemonsEnd: logs -f ends with exit 0 when the
// session does, and with exit 1 and a line saying so when its stream ends
// while the session goes on (the daemon killed): a script that waits on
// logs -f must not take a daemon's crash for the session's end.
func TestLogsFollowAcrossTheDaemonsEnd(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	dir := project(t)
	id := d.start("--checkpoint", "", dir, "--", "sh", "-c", "while :; do echo tick; sleep 0.2; done")

	follow := func(d *daemon) (wait func() (int, string)) {
		cmd := exec.Command(sessionctlBin, "--socket", d.sock, "logs", "-f", id)
		cmd.Env = cleanEnv()
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		first := make([]byte, 5)
		if _, err := io.ReadFull(out, first); err != nil || string(first) != "tick\n" {
			t.Fatalf("logs -f: %q, %v", first, err)
		}
		go func() { _, _ = io.Copy(io.Discard, out) }()
		ended := make(chan error, 1)
		go func() { ended <- cmd.Wait() }()
		return func() (int, string) {
			select {
			case err := <-ended:
				return exitCode(err), strings.TrimSpace(stderr.String())
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("logs -f went on; stderr %q", stderr.String())
				return 0, ""
			}
		}
	}

	wait := follow(d)
	d.kill9()
	if code, msg := wait(); code != 1 || !strings.Contains(msg, "the log stream of "+id+" ended before the session did") {
		t.Errorf("logs -f when the daemon is killed: exit %d, %q; want exit 1 saying the stream ended before the session", code, msg)
	}

	d = startDaemonAt(t, d.stateDir, d.sock)
	wait = follow(d)
	d.mustCtl("stop", id)
	if code, msg := wait(); code != 0 || msg != "" {
		t.Errorf("logs -f when the session is stopped: exit %d, %q; want exit 0 and nothing on stderr", code, msg)
	}
}
