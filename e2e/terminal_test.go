package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A shell script on a terminal prints, asks, reads the answer that
// sessionctl send types, and answers; its logs read as text, its handoff's
// log tail is its screen, and its screen stays readable after it ended.
func TestTerminalDialogBySend(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	script(t, dir, "ask.sh", `printf '\033[1;32mready\033[0m on a terminal: '; [ -t 0 ] && echo yes
printf 'name? '
read name
echo "hello, $name"
read bye
echo "bye, $bye"
exit 3
`)
	id := d.start("--tty", dir, "--", "./ask.sh")
	d.waitScreen(id, "ready on a terminal: yes", "name?")
	if !d.ttyFlag(id) {
		t.Fatal("the record of a --tty session says tty false")
	}
	waitFor(t, 10*time.Second, "the output on the terminal to count as activity", func() (bool, string) {
		return d.inspect(id).LastActivity != nil, "no last_activity"
	})
	d.mustCtl("send", id, "world", "--enter")
	d.waitScreen(id, "name? world", "hello, world")

	logs := d.mustCtl("logs", id)
	if strings.ContainsAny(logs, "\x1b\r") || !strings.Contains(logs, "ready on a terminal: yes\nname? world\nhello, world\n") {
		t.Errorf("logs of a tty session are not plain text:\n%q", logs)
	}
	if raw := d.mustCtl("logs", "--raw", id); !strings.Contains(raw, "\x1b[1;32mready\x1b[0m") || !strings.Contains(raw, "\r\n") {
		t.Errorf("logs --raw lost the control sequences:\n%q", raw)
	}
	if tail := d.mustCtl("logs", "-n", "1", id); tail != "hello, world\n" {
		t.Errorf("logs -n 1 = %q", tail)
	}

	d.mustCtl("send", id, "moon", "--enter")
	rec := d.waitEnded(id, 20*time.Second)
	if rec.EndReason != "error" || rec.ExitCode == nil || *rec.ExitCode != 3 {
		t.Fatalf("ended %s, exit %v; want error, exit 3", rec.EndReason, rec.ExitCode)
	}
	var h struct {
		LogTail []string `json:"log_tail"`
	}
	if err := json.Unmarshal([]byte(d.mustCtl("--json", "handoff", id)), &h); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h.LogTail, "|"); got != "ready on a terminal: yes|name? world|hello, world|moon|bye, moon" {
		t.Errorf("handoff log_tail %q, want the lines of the screen", got)
	}
	// The last screen is kept; the terminal is gone.
	if scr := d.mustCtl("screen", id); !strings.Contains(scr, "bye, moon") {
		t.Errorf("screen of the ended session: %q", scr)
	}
	r := d.ctl("attach", id)
	if r.code != 1 || !strings.Contains(r.stderr, "has ended") || !strings.Contains(r.stderr, "sessionctl screen") {
		t.Errorf("attach to an ended session:\n%s", r)
	}
	if r := d.ctl("send", id, "x"); r.code != 1 || !strings.Contains(r.stderr, "has ended") {
		t.Errorf("send to an ended session:\n%s", r)
	}
	// Its directory holds no stamp file, nor the empty next version of one
	// its directory was made with: its holder writes its log, untimed.
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(rec.LogPath), "*stamps*")); len(m) > 0 {
		t.Errorf("a terminal session's directory keeps %v", m)
	}
}

// Attach and detach driven through tmux as a person would: the window size
// follows, one writer types, a read-only viewer watches, the detach key
// leaves the session running.
func TestTerminalAttachThroughTmux(t *testing.T) {
	x := newTmux(t)
	d := startDaemon(t)
	dir := project(t)
	id := d.start("--tty", "--stop-grace", "1s", "--env", "PS1=tw$ ", dir, "--", "bash", "--norc", "--noprofile", "-i")
	d.waitScreen(id, "tw$")

	w := x.shell("writer", 100, 30)
	x.typeLine(w, sessionctlBin+" --socket "+d.sock+" attach "+id)
	x.waitPane(w, "tw$")
	x.typeLine(w, "echo sum=$((6*7)) cols=$(tput cols) lines=$(tput lines)")
	x.waitPane(w, "sum=42 cols=100 lines=30")
	d.waitScreen(id, "sum=42 cols=100")

	// A second writer is refused and told about --read-only.
	r := d.ctl("attach", id)
	if r.code != 1 || !strings.Contains(r.stderr, "writer") || !strings.Contains(r.stderr, "--read-only") {
		t.Fatalf("second writer:\n%s", r)
	}
	// A read-only viewer sees the screen and what follows; its keys go
	// nowhere.
	ro := x.shell("viewer", 100, 30)
	x.typeLine(ro, sessionctlBin+" --socket "+d.sock+" attach --read-only "+id)
	x.waitPane(ro, "sum=42 cols=100")
	x.typeLine(ro, "echo from-the-viewer")
	x.typeLine(w, "echo from-the-writer")
	x.waitPane(ro, "from-the-writer")
	if strings.Contains(d.mustCtl("screen", id), "from-the-viewer") {
		t.Fatal("a read-only viewer's keys reached the terminal")
	}

	// The window size follows the writer's window (SIGWINCH).
	x.run("resize-window", "-t", w, "-x", "120", "-y", "40")
	waitFor(t, 20*time.Second, "the terminal to take the new size", func() (bool, string) {
		var s screenOf
		_ = json.Unmarshal([]byte(d.mustCtl("--json", "screen", id)), &s)
		return s.Size.Cols == 120 && s.Size.Rows == 40, d.mustCtl("--json", "screen", id)
	})
	x.typeLine(w, "echo now=$(tput cols)")
	x.waitPane(w, "now=120")

	// ctrl-] detaches; the session goes on, and attaching again repaints.
	x.pressUntil(w, "C-]", "[detached from "+id)
	if rec := d.inspect(id); rec.State != "running" {
		t.Fatalf("after detach the session is %s", rec.State)
	}
	// A clear pane, so that what follows is the next attach's.
	x.typeLine(w, "clear")
	waitFor(t, 20*time.Second, "the writer's pane to clear", func() (bool, string) {
		pane := x.pane(w)
		return !strings.Contains(pane, "now=120") && !strings.Contains(pane, "[detached from"), pane
	})
	x.typeLine(w, sessionctlBin+" --socket "+d.sock+" attach --detach-key ctrl-b "+id)
	x.waitPane(w, "now=120")
	x.pressUntil(w, "C-b", "[detached from "+id)

	// The command's end ends the viewer's attach and says how.
	d.mustCtl("send", id, "exit 4", "--enter")
	x.waitPane(ro, "[the command of "+id+" ended: exit code 4]")
	rec := d.waitEnded(id, 20*time.Second)
	if rec.ExitCode == nil || *rec.ExitCode != 4 {
		t.Fatalf("exit code %v, want 4", rec.ExitCode)
	}
}

// A session without a terminal says so, and offers logs -f.
func TestTerminalAttachToPlainSession(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	id := d.start(dir, "--", "sleep", "30")
	if d.ttyFlag(id) {
		t.Fatal("a plain session's record says tty")
	}
	for _, args := range [][]string{{"attach", id}, {"send", id, "x"}, {"screen", id}} {
		r := d.ctl(args...)
		if r.code != 1 || !strings.Contains(r.stderr, "has no terminal") {
			t.Errorf("%s:\n%s", args[0], r)
		}
	}
	if r := d.ctl("attach", id); !strings.Contains(r.stderr, "sessionctl logs -f "+id) {
		t.Errorf("attach does not offer logs -f:\n%s", r)
	}
	d.mustCtl("stop", id)
}

// An interactive agent gets a terminal by default; a headless one, or one
// started with --tty=false, does not.
func TestTerminalDefaultForInteractiveAgents(t *testing.T) {
	d := startDaemon(t)
	for _, tc := range []struct {
		name string
		args []string
		tty  bool
	}{
		{"interactive claude", []string{"--", "./claude"}, true},
		{"headless claude", []string{"--", "./claude", "-p", "do it"}, false},
		{"interactive claude, --tty=false", []string{"--tty=false", "--", "./claude"}, false},
		{"any other command", []string{"--", "./agent"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := d.with(t)
			dir := project(t)
			// Stand-ins: they say whether they run on a terminal.
			for _, name := range []string{"claude", "agent"} {
				script(t, dir, name, `if [ -t 1 ]; then echo on-a-terminal; else echo no-terminal; fi; sleep 30`)
			}
			args := tc.args
			if args[0] == "--" {
				args = append([]string{dir}, args...)
			} else {
				args = append([]string{args[0], dir}, args[1:]...)
			}
			id := d.start(args...)
			if got := d.ttyFlag(id); got != tc.tty {
				t.Errorf("tty = %v, want %v", got, tc.tty)
			}
			want := "no-terminal"
			if tc.tty {
				want = "on-a-terminal"
			}
			waitFor(t, 10*time.Second, "the stand-in's first line", func() (bool, string) {
				out := d.mustCtl("logs", id)
				return strings.Contains(out, want), out
			})
			d.mustCtl("stop", "--grace", "0s", id)
		})
	}
}

// A full-screen program, seen through screen: vi on the alternate screen,
// its cursor and size, and typed into.
func TestTerminalFullScreenVi(t *testing.T) {
	vi, err := exec.LookPath("vi")
	if err != nil {
		t.Skip("vi is not installed on this machine (.ci/run installs vim-tiny)")
	}
	d := startDaemon(t)
	dir := project(t)
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("first line\nsecond line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := d.start("--tty", dir, "--", vi, "-u", "NONE", "-N", "notes.txt")
	d.waitScreen(id, "first line", "second line")
	scr := d.screen(id)
	if scr.Size.Cols != 80 || scr.Size.Rows != 24 || len(scr.Lines) != 24 {
		t.Fatalf("size %dx%d with %d lines, want 80x24", scr.Size.Cols, scr.Size.Rows, len(scr.Lines))
	}
	if !scr.AltScreen || scr.Lines[0] != "first line" || scr.Lines[2] != "~" || !strings.Contains(scr.Lines[23], "notes.txt") {
		t.Fatalf("vi's screen (alt %v): %q", scr.AltScreen, scr.Lines)
	}
	if scr.Cursor.X != 0 || scr.Cursor.Y != 0 {
		t.Errorf("cursor at %d,%d, want 0,0", scr.Cursor.X, scr.Cursor.Y)
	}
	d.mustCtl("send", id, "Oadded on top\x1b")
	d.waitScreen(id, "added on top")
	d.mustCtl("send", id, ":wq", "--enter")
	rec := d.waitEnded(id, 20*time.Second)
	if rec.EndReason != "complete" {
		t.Fatalf("vi ended %s", rec.EndReason)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "added on top\nfirst line\nsecond line\n" {
		t.Fatalf("notes.txt: %q", b)
	}
	// vi's alternate screen is not what the logs hold: they read as text.
	if logs := d.mustCtl("logs", id); strings.ContainsRune(logs, 0x1b) || !strings.Contains(logs, "first line") {
		t.Errorf("logs of vi: %q", logs)
	}
}

// kill -9 of the daemon while a viewer is attached: the terminal session
// runs on under its holder; the restarted daemon adopts it (same pid, the
// screen intact), the viewer reattaches, and the exit status that comes
// later is in the record.
func TestTerminalSurvivesDaemonKill9(t *testing.T) {
	x := newTmux(t)
	stateDir, sock := filepath.Join(t.TempDir(), "state"), newSocketPath(t)
	d := startDaemonAt(t, stateDir, sock)
	dir := project(t)
	id := d.start("--tty", "--stop-grace", "1s", "--env", "PS1=tw$ ", dir, "--", "bash", "--norc", "--noprofile", "-i")
	pid := d.inspect(id).PID
	killOnCleanup(t, pid)
	w := x.shell("viewer", 90, 25)
	x.typeLine(w, sessionctlBin+" --socket "+sock+" attach "+id)
	x.waitPane(w, "tw$")
	x.typeLine(w, "echo before-the-crash")
	x.waitPane(w, "before-the-crash")

	d.kill9()
	x.waitPane(w, "reattaching")
	if !alive(pid) {
		t.Fatal("the command died with the daemon")
	}
	d = startDaemonAt(t, stateDir, sock)
	rec := d.inspect(id)
	if rec.State != "running" || rec.PID != pid {
		t.Fatalf("after the restart: %s pid %d, want running pid %d", rec.State, rec.PID, pid)
	}
	if scr := d.mustCtl("screen", id); !strings.Contains(scr, "before-the-crash") {
		t.Fatalf("the screen after the restart:\n%s", scr)
	}
	// The viewer is attached again and types into the same shell.
	x.typeLine(w, "echo after-the-restart $$")
	x.waitPane(w, "after-the-restart "+strconv.Itoa(pid))
	d.mustCtl("send", id, "exit 5", "--enter")
	rec = d.waitEnded(id, 20*time.Second)
	if rec.EndReason != "error" || rec.ExitCode == nil || *rec.ExitCode != 5 {
		t.Fatalf("ended %s, exit %v; want error, exit 5", rec.EndReason, rec.ExitCode)
	}
	x.waitPane(w, "ended: exit code 5")
}

// A command that ends while no daemon runs: its holder records the exit,
// and the next daemon ends the session with it.
func TestTerminalExitWhileDaemonDown(t *testing.T) {
	stateDir, sock := filepath.Join(t.TempDir(), "state"), newSocketPath(t)
	d := startDaemonAt(t, stateDir, sock)
	dir := project(t)
	script(t, dir, "wait.sh", `echo waiting; while [ ! -e go ]; do sleep 0.05; done; echo going; exit 6`)
	id := d.start("--tty", dir, "--", "./wait.sh")
	d.waitScreen(id, "waiting")
	holder := d.holderPID(id)
	d.kill9()
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(stateDir, "sessions", id, "exit.json"), 20*time.Second)
	waitFor(t, 10*time.Second, "the holder to end", func() (bool, string) { return !alive(holder), "" })
	var exit struct {
		ExitedAt time.Time `json:"exited_at"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(stateDir, "sessions", id, "exit.json"))), &exit); err != nil || exit.ExitedAt.IsZero() {
		t.Fatalf("exit.json: %v", err)
	}
	sleepUntil(time.Now().Add(time.Second)) // the next daemon comes later
	d = startDaemonAt(t, stateDir, sock)
	rec := d.waitEnded(id, 20*time.Second)
	if rec.EndReason != "error" || rec.ExitCode == nil || *rec.ExitCode != 6 {
		t.Fatalf("ended %s, exit %v; want error, exit 6 (from the holder)", rec.EndReason, rec.ExitCode)
	}
	if rec.EndedAt == nil || !rec.EndedAt.Equal(exit.ExitedAt) {
		t.Errorf("ended at %v, want %v, when the holder saw the command end", rec.EndedAt, exit.ExitedAt)
	}
	if out := d.mustCtl("inspect", id); !strings.Contains(out, "while no daemon ran") {
		t.Errorf("the record does not say the end came while no daemon ran:\n%s", out)
	}
	if h := d.mustCtl("--json", "handoff", id); !strings.Contains(h, "going") {
		t.Errorf("handoff log_tail misses the last screen:\n%s", h)
	}
}

// A holder killed by SIGKILL takes the terminal with it: the command gets
// a hang-up, and the session ends as crashed, with its handoff.
func TestTerminalHolderKilled(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	id := d.start("--tty", dir, "--", "sleep", "300")
	pid := d.inspect(id).PID
	killOnCleanup(t, pid)
	if err := syscall.Kill(d.holderPID(id), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	rec := d.waitEnded(id, 20*time.Second)
	if rec.EndReason != "crashed" {
		t.Fatalf("end reason %s, want crashed", rec.EndReason)
	}
	if alive(pid) {
		t.Fatal("the command outlived its terminal")
	}
	h := d.mustCtl("--json", "handoff", id)
	if !strings.Contains(h, `"end_reason": "crashed"`) || !strings.Contains(h, "terminal holder") {
		t.Fatalf("handoff:\n%s", h)
	}
	if !fileExists(filepath.Join(dir, ".sessiond", "handoff.json")) {
		t.Fatal("no handoff in the project")
	}
	if r := d.ctl("attach", id); r.code != 1 || !strings.Contains(r.stderr, "has ended") {
		t.Fatalf("attach after the holder died:\n%s", r)
	}
}

// Stop and signals reach the terminal's process groups: a shell's job in
// the foreground gets the signal a person's key would send.
func TestTerminalSignalsReachTheForeground(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	id := d.start("--tty", "--stop-grace", "1s", "--env", "PS1=tw$ ", dir, "--", "bash", "--norc", "--noprofile", "-i")
	d.waitScreen(id, "tw$")
	d.mustCtl("send", id, "sleep 300", "--enter")
	shell := d.inspect(id).PID
	waitFor(t, 10*time.Second, "sleep in the foreground", func() (bool, string) {
		kids := childrenOf(shell)
		return kids != "", kids
	})
	d.mustCtl("kill", "-s", "SIGINT", id)
	waitFor(t, 10*time.Second, "sleep to end on SIGINT", func() (bool, string) {
		kids := childrenOf(shell)
		return kids == "", kids
	})
	d.mustCtl("send", id, "echo status=$?", "--enter")
	d.waitScreen(id, "status=130")
	if rec := d.inspect(id); rec.State != "running" {
		t.Fatalf("an interactive shell ended on SIGINT: %s", rec.State)
	}
	// An interactive shell ignores SIGTERM; a terminal session's stop is
	// the hangup, which ends it at once.
	out := d.mustCtl("stop", "--grace", "1s", id)
	rec := d.inspect(id)
	if rec.State != "ended" || rec.EndReason != "interrupted" || rec.Signal != "SIGHUP" {
		t.Fatalf("stop: %s %s %q\n%s", rec.State, rec.EndReason, rec.Signal, out)
	}
}

// Bad input at the terminal: two writers, a viewer that stops reading
// while the command writes flat out, window sizes of 0 and 65535, a
// command that closes its terminal.
func TestTerminalBadInput(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	script(t, dir, "flood.sh", `read x; head -c 20000000 /dev/zero | tr '\0' 'y'; echo; echo flood-done; read y`)
	id := d.start("--tty", dir, "--", "./flood.sh")

	writer, wr, code, status := rawAttach(t, d.sock, id, false)
	if code != 101 || !strings.Contains(status, `"writer":true`) {
		t.Fatalf("writer attach: %d %s", code, status)
	}
	defer writer.Close()
	if _, _, code, body := rawAttach(t, d.sock, id, false); code != 409 || !strings.Contains(body, "writer") {
		t.Fatalf("second writer: %d %s", code, body)
	}
	if r := d.ctl("send", id, "a\xff\xfe"); r.code != 2 || !strings.Contains(r.stderr, "not valid UTF-8") {
		t.Errorf("send of bytes that are no text: %s, want a usage error", r)
	}

	// Sizes: 0 is refused with a notice and the stream goes on; 65535 is
	// clamped.
	writeFrame(t, writer, 'r', sizePayload(0, 0))
	writeFrame(t, writer, 'r', sizePayload(65535, 65535))
	_ = writer.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		typ, p, err := readFrame(wr)
		if err != nil {
			t.Fatalf("the stream ended after a size of 0: %v", err)
		}
		if typ == 'e' {
			if !strings.Contains(string(p), "0x0") {
				t.Fatalf("notice %s", p)
			}
			break
		}
	}
	waitFor(t, 10*time.Second, "the clamped size", func() (bool, string) {
		s := d.screen(id)
		return s.Size.Cols == 512 && s.Size.Rows == 256, d.mustCtl("--json", "screen", id)
	})
	writeFrame(t, writer, 'r', sizePayload(80, 24))

	// A read-only viewer that never reads: the command writes 20 MB and
	// is not held up by it.
	slow, _, code, _ := rawAttach(t, d.sock, id, true)
	if code != 101 {
		t.Fatalf("read-only attach: %d", code)
	}
	defer slow.Close()
	writeFrame(t, writer, 'd', []byte("\r"))
	// The writer reads on, as a person's terminal does.
	go func() { _, _ = copyFrames(wr) }()
	d.waitScreen(id, "flood-done")
	writeFrame(t, writer, 'd', []byte("\r"))
	d.waitEnded(id, 20*time.Second)

	// A command that closes its terminal still has its exit recorded.
	id = d.start("--tty", dir, "--", "sh", "-c", "exec </dev/null >/dev/null 2>&1; sleep 0.3; exit 4")
	rec := d.waitEnded(id, 20*time.Second)
	if rec.ExitCode == nil || *rec.ExitCode != 4 {
		t.Fatalf("exit after closing the terminal: %v", rec.ExitCode)
	}
}

func copyFrames(r interface{ Read([]byte) (int, error) }) (int, error) {
	n := 0
	for {
		_, p, err := readFrame(r)
		n += len(p)
		if err != nil {
			return n, err
		}
	}
}

// childrenOf lists a process's children, as /proc has them.
func childrenOf(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	return strings.TrimSpace(string(b))
}

// The holder rotates a terminal session's log by renaming, within
// log_max_size x log_keep; the daemon leaves it alone, and a follower
// reads on across the renames without losing a line.
func TestTerminalLogRotation(t *testing.T) {
	sock := newSocketPath(t)
	d := startDaemonWith(t, filepath.Join(t.TempDir(), "state"), sock, "log_max_size = \"4KiB\"\nlog_keep = 3\n[defaults]\ncheckpoint = \"\"\n")
	dir := project(t)
	// Paced, a rotation every few batches: a follower that falls behind
	// by more than the files kept (12 KiB here) loses what was rotated out
	// before it got there, as the cap means it to.
	script(t, dir, "count.sh", `read go; i=0; while [ $i -lt 2000 ]; do echo "line $i"; i=$((i+1)); [ $((i % 100)) = 0 ] && sleep 0.05; done; echo counted; read x`)
	id := d.start("--tty", dir, "--", "./count.sh")
	d.waitScreen(id)
	follow := exec.Command(sessionctlBin, "--socket", sock, "logs", "-f", id)
	follow.Env = cleanEnv()
	var got strings.Builder
	follow.Stdout = &got
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	d.mustCtl("send", id, "", "--enter")
	d.waitScreen(id, "counted")
	d.mustCtl("send", id, "", "--enter")
	d.waitEnded(id, 20*time.Second)
	done := make(chan error, 1)
	go func() { done <- follow.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("logs -f: %v", err)
		}
	case <-time.After(20 * time.Second):
		_ = follow.Process.Kill()
		<-done
		t.Fatal("logs -f did not end with the session")
	}
	for i := 0; i < 2000; i++ {
		if !strings.Contains(got.String(), "\nline "+strconv.Itoa(i)+"\n") {
			t.Fatalf("the follower lost line %d across the rotations (%d bytes followed)", i, got.Len())
		}
	}
	logDir := filepath.Join(d.stateDir, "sessions", id)
	var total int64
	for _, name := range []string{"output.log", "output.log.1", "output.log.2"} {
		fi, err := os.Stat(filepath.Join(logDir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fi.Size() > 4096 {
			t.Errorf("%s holds %d bytes, over log_max_size", name, fi.Size())
		}
		total += fi.Size()
	}
	if fileExists(filepath.Join(logDir, "output.log.3")) {
		t.Error("more rotated logs than log_keep")
	}
	if logs := d.mustCtl("logs", id); !strings.Contains(logs, "line 1999\ncounted\n") || strings.Contains(logs, "line 0\n") {
		t.Errorf("logs after rotation: %d bytes, last %q", len(logs), logs[max(0, len(logs)-40):])
	}
}

// The dialog of a script, answered by a person through attach in tmux.
func TestTerminalDialogThroughAttach(t *testing.T) {
	x := newTmux(t)
	d := startDaemon(t)
	dir := project(t)
	script(t, dir, "ask.sh", `printf 'name? '
read name
echo "hello, $name"
sleep 0.2
exit 2
`)
	id := d.start("--tty", dir, "--", "./ask.sh")
	d.waitScreen(id, "name?")
	w := x.shell("person", 80, 24)
	x.typeLine(w, sessionctlBin+" --socket "+d.sock+" attach "+id)
	x.waitPane(w, "name?")
	x.typeLine(w, "Ada")
	x.waitPane(w, "hello, Ada", "[the command of "+id+" ended: exit code 2]")
	rec := d.waitEnded(id, 20*time.Second)
	if rec.ExitCode == nil || *rec.ExitCode != 2 {
		t.Fatalf("exit %v, want 2", rec.ExitCode)
	}
	if logs := d.mustCtl("logs", id); !strings.Contains(logs, "name? Ada\nhello, Ada\n") {
		t.Errorf("logs: %q", logs)
	}
}

// A daemon started ignoring SIGHUP and SIGINT (under nohup, or as a
// script's background job) still starts sessions with them at their
// default: a terminal session (its holder in between) and a plain one stop
// at their stop signal, SIGHUP, not at the SIGKILL after their grace.
func TestTerminalStopsUnderNohup(t *testing.T) {
	wrapper := filepath.Join(t.TempDir(), "nohup-sessiond")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\ntrap '' HUP INT\nexec "+sessiondBin+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := startBuild(t, wrapper, nil, filepath.Join(t.TempDir(), "state"), newSocketPath(t), "")
	tty := d.start("--tty", project(t), "--", "sh", "-c", "echo up; while :; do sleep 0.1; done")
	plain := d.start("--stop-signal", "SIGHUP", project(t), "--", "sh", "-c", "echo up; while :; do sleep 0.1; done")
	d.waitScreen(tty, "up")
	for _, c := range []struct{ id, signal string }{{tty, "SIGHUP"}, {plain, "SIGHUP"}} {
		start := time.Now()
		d.mustCtl("stop", c.id)
		rec := d.waitEnded(c.id, 20*time.Second)
		if rec.Signal != c.signal || time.Since(start) > 10*time.Second {
			t.Errorf("session %s ended by %q after %v, want by its stop signal %s at once", c.id, rec.Signal, time.Since(start).Round(time.Millisecond), c.signal)
		}
	}
}

// TestTerminalAttachKeepsTheViewersTerminal: what a session prints can
// draw on the attached terminal but not act past its screen: its clipboard
// is neither written nor read (OSC 52), its title is not set; and a
// detach leaves the modes the session set (scroll region, autowrap,
// insert mode) as they were.
func TestTerminalAttachKeepsTheViewersTerminal(t *testing.T) {
	x := newTmux(t)
	d := startDaemon(t)
	dir := project(t)
	id := d.start("--tty", "--stop-grace", "1s", "--env", "PS1=tw$ ", dir, "--", "bash", "--norc", "--noprofile", "-i")
	d.waitScreen(id, "tw$")
	w := x.shell("viewer", 100, 30)
	x.run("set-option", "-g", "set-clipboard", "on")
	x.run("set-buffer", "-b", "mine", "the viewer's clipboard")
	x.run("select-pane", "-t", w, "-T", "the viewer's title")
	x.typeLine(w, sessionctlBin+" --socket "+d.sock+" attach "+id)
	x.waitPane(w, "tw$")

	// Written in pieces, so that no line of the pane echoes the sequences.
	x.typeLine(w, `e=$(printf '\033'); b=$(printf '\007'); printf '%s]52;c;%s%s%s]0;PWNED%s' $e $(printf 'rm -rf ~' | base64) $b $e $b; echo drawn`)
	x.waitPane(w, "drawn")
	x.typeLine(w, `printf '%s]52;c;?%s'  $e $b; IFS= read -t2 -rs -d $b got; echo "read=[${got}]"`)
	x.waitPane(w, "read=[]")
	// A query is answered by the session's own terminal, once.
	x.typeLine(w, `printf '%s[6n' $e; IFS= read -t2 -rs -d R pos; IFS= read -t1 -rs -d R again; echo "pos=${#pos},${#again}"`)
	answered := regexp.MustCompile(`(?m)^pos=(\d+),(\d+)`)
	waitFor(t, 20*time.Second, "the query's answer", func() (bool, string) {
		pane := x.pane(w)
		return answered.MatchString(pane), pane
	})
	if m := answered.FindStringSubmatch(x.pane(w)); m[1] == "0" || m[2] != "0" {
		t.Errorf("a cursor position query while attached: answers of %s and %s bytes, want one", m[1], m[2])
	}
	x.typeLine(w, `printf '%s[3;10r%s[?7l%s[4h'  $e $e $e; echo modes`)
	x.waitPane(w, "modes")
	x.pressUntil(w, "C-]", "[detached from "+id)

	if bufs := x.run("list-buffers"); strings.Contains(bufs, "rm -rf") {
		t.Errorf("the session wrote the viewer's clipboard:\n%s", bufs)
	}
	if title := x.run("display-message", "-p", "-t", w, "#{pane_title}"); strings.Contains(title, "PWNED") {
		t.Errorf("the session set the viewer's title: %s", title)
	}
	modes := x.run("display-message", "-p", "-t", w, "#{scroll_region_upper},#{scroll_region_lower},#{wrap_flag},#{insert_flag}")
	if strings.TrimSpace(modes) != "0,29,1,0" {
		t.Errorf("after the detach the viewer's scroll region, wrap and insert flags are %q, want 0,29,1,0", strings.TrimSpace(modes))
	}
	d.mustCtl("stop", id)
}

// TestTerminalSendToAProgramThatDoesNotRead: a send the terminal's
// program does not take is refused after a while, saying how much was
// typed, and the rest is not typed later; a viewer's keys are not held up
// behind it for good.
func TestTerminalSendToAProgramThatDoesNotRead(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	id := d.start("--tty", "--stop-grace", "1s", dir, "--", "sh", "-c", "stty -icanon -echo; sleep 1000")
	waitFor(t, 10*time.Second, "the command to run", func() (bool, string) {
		return len(procsRunning("sleep", "1000")) > 0, ""
	})
	big := strings.Repeat("y", 60000)
	for range 2 {
		began := time.Now()
		r := executeWithin(t, 30*time.Second, cleanEnv(), sessionctlBin, "--socket", d.sock, "send", id, big)
		if r.code != 1 || !strings.Contains(r.stderr, "not reading its input") || !strings.Contains(r.stderr, "the rest dropped") {
			t.Errorf("a send the program does not read: %s", r)
		}
		if took := time.Since(began); took > 15*time.Second {
			t.Errorf("the send took %s", took)
		}
	}
	d.mustCtl("stop", id)
}

// TestTerminalAttachWhoseInputEnded: an attach whose input ends (attach <
// file) watches on, and gives up the writer's place: a person can attach
// and type.
func TestTerminalAttachWhoseInputEnded(t *testing.T) {
	d := startDaemon(t)
	dir := project(t)
	id := d.start("--tty", "--stop-grace", "1s", "--env", "PS1=ie$ ", dir, "--", "bash", "--norc", "--noprofile", "-i")
	d.waitScreen(id, "ie$")
	watcher := exec.Command(sessionctlBin, "--socket", d.sock, "attach", id)
	watcher.Env = cleanEnv()
	watcher.Stdin = strings.NewReader("echo typed-$((40+2))\n")
	out, err := os.Create(filepath.Join(t.TempDir(), "watched"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	watcher.Stdout = out
	if err := watcher.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = watcher.Process.Kill(); _ = watcher.Wait() }()
	d.waitScreen(id, "typed-42")
	var code int
	var status string
	waitFor(t, 10*time.Second, "the writer's place to be free", func() (bool, string) {
		var c net.Conn
		c, _, code, status = rawAttach(t, d.sock, id, false)
		if c != nil {
			c.Close()
		}
		return code == 101, fmt.Sprint(code, " ", status)
	})
	d.mustCtl("send", id, "echo still-watched", "--enter")
	waitFor(t, 10*time.Second, "the attach whose input ended to go on showing the session", func() (bool, string) {
		b, _ := os.ReadFile(out.Name())
		return strings.Contains(string(b), "still-watched"), ""
	})
	d.mustCtl("stop", id)
}
