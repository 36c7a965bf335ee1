package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// tmuxPane is a sessionctl ui running in a pane of a tmux server of the
// test's own, read with capture-pane as a person would see it.
type tmuxPane struct {
	t    *testing.T
	sock string
}

// uiWait bounds each wait for the screen to show a change.
const uiWait = 20 * time.Second

// startUI opens sessionctl ui on the daemon in a width × height tmux pane.
// When the dashboard exits, the pane's shell prints "ui exited N".
func startUI(t *testing.T, d *daemon, width, height int) *tmuxPane {
	t.Helper()
	return startUIWith(t, d, width, height, "")
}

// startUIWith is startUI with environment assignments ("NO_COLOR=1")
// before the command.
func startUIWith(t *testing.T, d *daemon, width, height int, env string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: the dashboard is driven through it (.ci/run installs it)")
	}
	dir, err := os.MkdirTemp("", "tm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	conf := filepath.Join(dir, "tmux.conf")
	// No status line, so that the pane is the whole window; a short
	// escape time, so that esc reaches the dashboard at once.
	if err := os.WriteFile(conf, []byte("set -g status off\nset -g escape-time 10\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &tmuxPane{t: t, sock: filepath.Join(dir, "s")}
	shell := fmt.Sprintf("%s %s --socket %s ui; echo ui exited $?; sleep 600", env, sessionctlBin, d.sock)
	p.run("-f", conf, "new-session", "-d", "-s", "ui", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), shell)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last screen:\n%s", p.capture())
		}
		_ = exec.Command("tmux", "-S", p.sock, "kill-server").Run()
	})
	return p
}

// run runs a tmux command on the test's server.
func (p *tmuxPane) run(args ...string) string {
	p.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-S", p.sock}, args...)...)
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// capture is the pane's screen as text.
func (p *tmuxPane) capture() string { return p.captureWith() }

// captureWith is capture with more capture-pane flags (-e: with the
// attributes and colours, as escape sequences).
func (p *tmuxPane) captureWith(flags ...string) string {
	out, err := exec.Command("tmux", append([]string{"-S", p.sock, "capture-pane", "-p", "-t", "ui"}, flags...)...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(capture-pane: %v: %s)", err, out)
	}
	return string(out)
}

// keys types keys as tmux names them (Down, Enter, Escape, or text).
func (p *tmuxPane) keys(keys ...string) {
	p.t.Helper()
	p.run(append([]string{"send-keys", "-t", "ui"}, keys...)...)
}

// waitFor waits until the screen satisfies cond and returns it.
func (p *tmuxPane) waitFor(what string, cond func(screen string) bool) string {
	p.t.Helper()
	var screen string
	waitFor(p.t, uiWait, what, func() (bool, string) {
		screen = p.capture()
		return cond(screen), "\n" + screen
	})
	return screen
}

// waitText waits until the screen shows every text.
func (p *tmuxPane) waitText(texts ...string) string {
	p.t.Helper()
	return p.waitFor(fmt.Sprintf("the screen to show %q", texts), func(s string) bool {
		for _, x := range texts {
			if !strings.Contains(s, x) {
				return false
			}
		}
		return true
	})
}

// row returns the list's line of the session named name, or "".
func row(screen, name string) string {
	re := regexp.MustCompile(`(?m)^[▸ ] ` + regexp.QuoteMeta(name) + ` .*$`)
	return re.FindString(screen)
}

// TestDashboardInTmux drives sessionctl ui as a person would: three
// sessions, move, filter, stop one (confirming), extend another, watch the
// third end on its own, resize the window, quit.
func TestDashboardInTmux(t *testing.T) {
	d := startDaemon(t)
	loop := "while :; do echo tick; sleep 0.5; done"
	alpha := d.start("--name", "alpha", "--timeout", "1h", project(t), "--", "bash", "-c", loop)
	beta := d.start("--name", "beta", "--timeout", "1h", project(t), "--", "bash", "-c", loop)
	gammaDir := project(t)
	release := filepath.Join(gammaDir, "release")
	// gamma ends by itself once the test lets it, so that the test sees it
	// live first.
	gamma := d.start("--name", "gamma", "--timeout", "1h", gammaDir, "--", "bash", "-c",
		"echo waiting; while [ ! -e release ]; do sleep 0.1; done; echo gamma is done")
	betaDeadline := d.inspect(beta).Deadline

	p := startUI(t, d, 80, 24)

	// The three sessions, the first selected, its output followed.
	s := p.waitText("[live 3]", "alpha", "beta", "gamma", "─ alpha · "+alpha, "tick")
	for _, name := range []string{"alpha", "beta", "gamma"} {
		if r := row(s, name); !strings.Contains(r, "running") {
			t.Errorf("the row of %s should say running: %q\n%s", name, r, s)
		}
	}
	if !strings.HasPrefix(row(s, "alpha"), "▸") {
		t.Errorf("alpha, the first started, should be selected:\n%s", s)
	}

	// Move.
	p.keys("Down")
	p.waitFor("beta selected", func(s string) bool {
		return strings.HasPrefix(row(s, "beta"), "▸") && strings.Contains(s, "─ beta · "+beta)
	})
	p.keys("Down")
	p.waitText("─ gamma · "+gamma, "waiting")
	p.keys("Up", "Up")
	p.waitText("─ alpha · " + alpha)

	// Filter: only gamma matches; esc brings everyone back.
	p.keys("/")
	p.waitText("filter: type words to match")
	p.keys("gam")
	s = p.waitFor("only gamma listed", func(s string) bool {
		return row(s, "gamma") != "" && row(s, "alpha") == "" && row(s, "beta") == "" && strings.Contains(s, "/gam")
	})
	if !strings.Contains(s, "/gam") || !strings.Contains(s, "─ gamma · ") {
		t.Errorf("the filter and the match should show:\n%s", s)
	}
	p.keys("Enter")
	p.waitText("? help")
	p.keys("Escape")
	p.waitFor("every session back", func(s string) bool {
		return row(s, "alpha") != "" && row(s, "beta") != "" && row(s, "gamma") != "" && !strings.Contains(s, "/gam")
	})

	// Stop alpha, confirming.
	p.keys("Home")
	p.waitText("─ alpha · " + alpha)
	p.keys("s")
	p.waitText("Stop alpha ("+alpha+")?", "[y/N]", "$ sessionctl --socket "+d.sock+" stop "+alpha)
	p.keys("y")
	s = p.waitText("✓ $ sessionctl --socket", "stop "+alpha, "[live 2]")
	if row(s, "alpha") != "" {
		t.Errorf("alpha should have left the live view:\n%s", s)
	}
	if rec := d.inspect(alpha); rec.State != "ended" || rec.EndReason != "interrupted" {
		t.Errorf("alpha is %s (%s), want ended (interrupted)", rec.State, rec.EndReason)
	}

	// Extend beta, now the first row.
	p.waitText("─ beta · " + beta)
	p.keys("e")
	p.waitText("Extend beta ("+beta+") by: 30m", "extend "+beta+" 30m")
	p.keys("BSpace", "BSpace", "BSpace", "45m")
	p.waitText("extend " + beta + " 45m")
	p.keys("Enter")
	p.waitText("✓ $ sessionctl --socket", "extend "+beta+" 45m: deadline")
	if got := d.inspect(beta).Deadline.Sub(betaDeadline); got != 45*time.Minute {
		t.Errorf("beta's deadline moved by %s, want 45m", got)
	}

	// gamma ends on its own.
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p.waitFor("gamma to leave the live view", func(s string) bool {
		return strings.Contains(s, "[live 1]") && row(s, "gamma") == ""
	})
	p.keys("2")
	p.waitFor("gamma listed as complete in the ended view", func(s string) bool {
		return strings.Contains(s, "[ended 2]") && strings.Contains(row(s, "gamma"), "complete") &&
			strings.Contains(row(s, "alpha"), "interrupted")
	})
	p.keys("Down")
	p.waitText("─ gamma · "+gamma+" · complete", "complete, exit 0", "gamma is done", "output (ended)")

	// Resize: a wide window has room for the project column, and the
	// record beside the output; back to 80 columns it goes.
	p.run("resize-window", "-t", "ui", "-x", "160", "-y", "40")
	s = p.waitText("PROJECT", gammaDir, " │ ")
	if n := len(strings.Split(strings.TrimRight(s, "\n"), "\n")); n > 40 {
		t.Errorf("the screen has %d lines in a 40-line window", n)
	}
	p.run("resize-window", "-t", "ui", "-x", "80", "-y", "24")
	p.waitFor("the narrow layout again", func(s string) bool {
		return !strings.Contains(s, "PROJECT") && strings.Contains(s, "[ended 2]")
	})

	// Quit: the terminal comes back as it was.
	p.keys("q")
	p.waitText("ui exited 0")
	if alt := strings.TrimSpace(p.run("display-message", "-p", "-t", "ui", "#{alternate_on}")); alt != "0" {
		t.Errorf("the alternate screen is still on after quitting (%q)", alt)
	}
	if s := p.capture(); strings.Contains(s, "sessiond [live") {
		t.Errorf("the dashboard is still on the screen after quitting:\n%s", s)
	}
	// The window's title is the one it had (tmux's first: the host name).
	host, _ := os.Hostname()
	if title := strings.TrimSpace(p.run("display-message", "-p", "-t", "ui", "#{pane_title}")); title != host {
		t.Errorf("the window's title after quitting is %q, want %q as before", title, host)
	}
}

// lastTick is the highest "tick N" on the screen.
func lastTick(screen string) int {
	n := 0
	for _, m := range regexp.MustCompile(`(?m)^tick (\d+)$`).FindAllStringSubmatch(screen, -1) {
		var v int
		fmt.Sscan(m[1], &v)
		n = max(n, v)
	}
	return n
}

// TestDashboardReconnects shows a daemon that goes away, and the
// dashboard back on the daemon that comes after it, following the same
// session's output again.
func TestDashboardReconnects(t *testing.T) {
	stateDir, sock := filepath.Join(t.TempDir(), "state"), newSocketPath(t)
	leave := "on_shutdown = \"leave\"\n"
	d := startDaemonWith(t, stateDir, sock, leave)
	id := d.start("--name", "keeper", "--timeout", "1h", project(t), "--", "bash", "-c",
		"i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.2; done")
	killOnCleanup(t, d.inspect(id).PID)

	p := startUI(t, d, 80, 24)
	p.waitText("[live 1]", "keeper", "tick 3", "output (following)")

	d.stop()
	s := p.waitText("offline", "sessiond is not reachable on "+sock, "retrying")
	if strings.Contains(s, "output (following)") {
		t.Errorf("with the daemon gone the output is not followed:\n%s", s)
	}
	gone := lastTick(s)

	d2 := startDaemonWith(t, stateDir, sock, leave)
	s = p.waitFor("the dashboard back, following the output again", func(s string) bool {
		return !strings.Contains(s, "offline") && strings.Contains(row(s, "keeper"), "running") &&
			strings.Contains(s, "output (following)") && lastTick(s) > gone+2
	})
	if !strings.Contains(s, "─ keeper · "+id) {
		t.Errorf("the selection should be kept:\n%s", s)
	}
	d2.mustCtl("stop", id)
	p.waitText("[live 0]", "ended 1")
	p.keys("q")
	p.waitText("ui exited 0")
}

// colourSGR matches an SGR sequence that sets a colour (30–37, 90–97,
// 38;..., and the backgrounds).
var colourSGR = regexp.MustCompile(`\x1b\[(?:[0-9;]*;)?(?:3[0-8]|4[0-8]|9[0-7]|10[0-7])(?:;[0-9;]*)?m`)

// reverseSGR matches an SGR sequence that turns reverse video on.
var reverseSGR = regexp.MustCompile(`\x1b\[(?:[0-9;]*;)?7(?:;[0-9;]*)?m`)

// TestDashboardNoColor: NO_COLOR leaves every colour out, and keeps the
// selection in reverse video; without it, a running session is green.
func TestDashboardNoColor(t *testing.T) {
	d := startDaemon(t)
	d.start("--name", "plain", "--timeout", "1h", project(t), "--", "sleep", "600")
	for _, tt := range []struct {
		env    string
		colour bool
	}{{"NO_COLOR=1", false}, {"", true}} {
		p := startUIWith(t, d, 80, 24, tt.env)
		p.waitText("[live 1]", "plain", "running")
		s := p.captureWith("-e")
		if got := colourSGR.FindAllString(s, -1); tt.colour != (len(got) > 0) {
			t.Errorf("env %q: colour sequences %q, want colour %v\n%q", tt.env, got, tt.colour, s)
		}
		if !reverseSGR.MatchString(s) {
			t.Errorf("env %q: the selection should be in reverse video:\n%q", tt.env, s)
		}
		p.keys("q")
		p.waitText("ui exited 0")
		p.run("kill-server")
	}
}
