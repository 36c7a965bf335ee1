package ui

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/ipc"
)

var update = flag.Bool("update", false, "rewrite the golden views in testdata/")

// t0 is the clock of every test view.
var t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) *time.Time {
	t := t0.Add(d)
	return &t
}

func intp(n int) *int { return &n }

// fixture is a set of sessions of every kind the list shows.
func fixture() []ipc.Session {
	return []ipc.Session{
		{
			ID: "a1x2c3d4", Name: "alpha", ProjectDir: "/home/dev/src/shop", Command: []string{"claude", "-p", "fix the cart"},
			State: ipc.StateRunning, PID: 4242, StartedAt: t0.Add(-time.Hour), Deadline: t0.Add(3 * time.Hour),
			WarnAt: t0.Add(150 * time.Minute), LastActivity: at(-12 * time.Second), LastFileEdited: "cart/total.go",
			FilesChanged: []string{"cart/total.go", "cart/total_test.go"}, Checkpoints: 3, LastCheckpoint: "c0ffee00c0ffee00",
			Seq: 10, UID: 1000, TTY: true,
			Agent:    &ipc.Agent{Name: "claude-code", Integrated: true, State: ipc.AgentWorking, StateSince: at(-5 * time.Second), Turns: 7},
			Tokens:   &ipc.Tokens{Input: 800_000, Output: 200_000, CacheRead: 234_000, CostUSD: 3.4, CostKnown: true},
			Worktree: &ipc.Worktree{Name: "cart", Branch: "sessiond/cart", Path: "/home/dev/src/shop", Repo: "/home/dev/src/shop-main"},
		},
		{
			ID: "b5y6z7w8", Name: "beta", ProjectDir: "/home/dev/src/api", Command: []string{"codex", "exec", "add retries"},
			State: ipc.StateWarned, PID: 4343, StartedAt: t0.Add(-50 * time.Minute), Deadline: t0.Add(10 * time.Minute),
			WarnAt: t0.Add(-20 * time.Minute), LastActivity: at(-3 * time.Minute), Checkpoints: 1, Restarts: 1,
			Seq: 4, UID: 1000,
			Agent: &ipc.Agent{Name: "codex", Integrated: true, State: ipc.AgentWaiting, WaitingReason: "permission: Bash", StateSince: at(-2 * time.Minute)},
		},
		{
			ID: "c9k0m1n2", Name: "gamma", ProjectDir: "/home/dev/src/docs", Command: []string{"make", "docs"},
			State: ipc.StateEnded, EndReason: ipc.EndTimeout, Signal: "SIGKILL", StartedAt: t0.Add(-2 * time.Hour),
			EndedAt: at(-10 * time.Minute), Deadline: t0.Add(-10 * time.Minute), WarnAt: t0.Add(-40 * time.Minute),
			LastActivity: at(-15 * time.Minute), Checkpoints: 5, Seq: 20, UID: 1000,
			HandoffPath: "/home/dev/src/docs/.sessiond/handoff.json",
		},
		{
			ID: "d3p4q5r6", Name: "delta", ProjectDir: "/home/dev/src/cli", Command: []string{"./agent.sh"},
			State: ipc.StateEnded, EndReason: ipc.EndComplete, ExitCode: intp(0), StartedAt: t0.Add(-5 * time.Hour),
			EndedAt: at(-4 * time.Hour), Deadline: t0.Add(-time.Hour), WarnAt: t0.Add(-90 * time.Minute), Seq: 9, UID: 1000,
		},
		{
			ID: "e7s8t9v0", Name: "eps", ProjectDir: "/home/dev/src/infra", Command: []string{"terraform", "plan"},
			State: ipc.StateFailed, StartedAt: t0.Add(-30 * time.Minute), EndedAt: at(-30 * time.Minute),
			Deadline: t0.Add(210 * time.Minute), Error: "preflight check `make lint` failed: exit status 2", Seq: 2, UID: 1000,
		},
	}
}

// newTestModel is a dashboard of the given size, connected to no daemon,
// that has listed the fixture.
func newTestModel(t *testing.T, width, height int, opt Options) model {
	t.Helper()
	if opt.Socket == "" {
		opt.Socket = "/run/user/1000/sessiond.sock"
	}
	m := newModel(opt)
	m.loc = time.UTC
	m.now = t0
	return send(t, m, tea.WindowSizeMsg{Width: width, Height: height}, connectedMsg{sessions: fixture()})
}

// send applies messages in order.
func send(t *testing.T, m model, msgs ...tea.Msg) model {
	t.Helper()
	for _, msg := range msgs {
		next, _ := m.Update(msg)
		m = next.(model)
	}
	return m
}

// keyMsg is the message of a key as Bubble Tea names it.
func keyMsg(k string) tea.KeyPressMsg {
	special := map[string]rune{
		"up": tea.KeyUp, "down": tea.KeyDown, "enter": tea.KeyEnter, "esc": tea.KeyEscape, "tab": tea.KeyTab,
		"backspace": tea.KeyBackspace, "pgdown": tea.KeyPgDown, "pgup": tea.KeyPgUp, "home": tea.KeyHome, "end": tea.KeyEnd,
	}
	if k == "shift+tab" {
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	}
	if k == "ctrl+c" {
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	if c, ok := special[k]; ok {
		return tea.KeyPressMsg{Code: c}
	}
	r := []rune(k)
	return tea.KeyPressMsg{Code: r[0], Text: k}
}

// press types keys; text is typed rune by rune.
func press(t *testing.T, m model, keys ...string) model {
	t.Helper()
	for _, k := range keys {
		m = send(t, m, keyMsg(k))
	}
	return m
}

func typeText(t *testing.T, m model, text string) model {
	t.Helper()
	for _, r := range text {
		m = send(t, m, keyMsg(string(r)))
	}
	return m
}

// screen is the view as plain text, as a terminal shows it without
// attributes.
func screen(m model) string {
	return ansi.Strip(m.View().Content)
}

// golden compares the view with testdata/NAME.golden (-update rewrites it)
// and checks that the view fits the window.
func golden(t *testing.T, m model, name string) {
	t.Helper()
	got := screen(m)
	lines := strings.Split(got, "\n")
	if len(lines) != m.height {
		t.Errorf("%s: the view has %d lines, the window %d", name, len(lines), m.height)
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > m.width {
			t.Errorf("%s: line %d is %d cells wide, the window %d: %q", name, i+1, w, m.width, l)
		}
	}
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s: view differs from %s (go test -update rewrites it)\n--- got:\n%s\n--- want:\n%s", name, path, got, want)
	}
}

func output(m model, lines ...string) logMsg { return logMsg{f: m.tail.f, lines: lines} }

func TestGoldenViews(t *testing.T) {
	tests := []struct {
		name          string
		width, height int
		opt           Options
		do            func(t *testing.T, m model) model
	}{
		{"live_80x24", 80, 24, Options{}, func(t *testing.T, m model) model {
			return send(t, m, output(m, "compiling cart", "ok  shop/cart 0.412s", "\x1b[32mPASS\x1b[0m"),
				checkpointsMsg{dir: "/home/dev/src/shop", list: []ipc.Checkpoint{
					{ID: "c0ffee00c0ffee00", SessionID: "a1x2c3d4", Time: t0.Add(-4 * time.Minute), FilesChanged: 2, Turn: "Fix rounding"},
				}})
		}},
		{"second_row_80x24", 80, 24, Options{}, func(t *testing.T, m model) model {
			return press(t, m, "down")
		}},
		{"all_by_state_80x24", 80, 24, Options{}, func(t *testing.T, m model) model {
			return press(t, m, "3", "o", "o")
		}},
		{"ended_handoff_80x24", 80, 24, Options{}, func(t *testing.T, m model) model {
			m = press(t, m, "2", "down")
			return send(t, m, handoffMsg{id: "c9k0m1n2", h: &ipc.Handoff{
				SessionID: "c9k0m1n2", EndReason: ipc.EndTimeout, TaskAttempted: "Rewrite the install guide", TaskStatus: "in_progress",
				CurrentStep: 2, TotalSteps: 5, RecommendedNextSteps: []string{"Finish the macOS section", "Check the links"},
				GitBranch: "main", GitCommitHash: "0123456789abcdef", UncommittedFiles: []string{"docs/install.md"}, Checkpoint: "feedfacefeedface",
			}}, output(m, "building docs", "killed"), logMsg{f: m.tail.f, ended: true})
		}},
		{"failed_80x24", 80, 24, Options{}, func(t *testing.T, m model) model {
			m = press(t, m, "2", "end")
			return send(t, m, handoffMsg{id: "e7s8t9v0", err: ipc.NotFound("session e7s8t9v0 has no handoff")})
		}},
		{"filter_typing_80x24", 80, 24, Options{}, func(t *testing.T, m model) model {
			return typeText(t, press(t, m, "3", "/"), "api")
		}},
		{"filter_nothing_80x24", 80, 24, Options{}, func(t *testing.T, m model) model {
			return press(t, typeText(t, press(t, m, "/"), "zzz"), "enter")
		}},
		{"confirm_stop_80x24", 80, 24, Options{}, func(t *testing.T, m model) model {
			return press(t, m, "s")
		}},
		{"extend_prompt_80x24", 80, 24, Options{SocketGiven: true}, func(t *testing.T, m model) model {
			return typeText(t, press(t, m, "down", "e", "backspace", "backspace", "backspace"), "1h")
		}},
		{"signal_bad_80x24", 80, 24, Options{}, func(t *testing.T, m model) model {
			return press(t, typeText(t, press(t, m, "k"), "NOPE"), "enter")
		}},
		{"action_done_80x24", 80, 24, Options{}, func(t *testing.T, m model) model {
			m = press(t, m, "s", "y")
			return send(t, m, actionMsg{command: "sessionctl stop a1x2c3d4", text: "ended: interrupted, killed by SIGTERM · handoff /home/dev/src/shop/.sessiond/handoff.json"})
		}},
		{"offline_80x24", 80, 24, Options{}, func(t *testing.T, m model) model {
			return send(t, m, offlineMsg{err: &ipc.UnreachableError{Socket: "/run/user/1000/sessiond.sock", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}})
		}},
		{"help_80x24", 80, 24, Options{}, func(t *testing.T, m model) model {
			return press(t, m, "?")
		}},
		{"restore_picker_80x24", 80, 24, Options{}, func(t *testing.T, m model) model {
			m = press(t, m, "r")
			return press(t, send(t, m, checkpointsMsg{dir: "/home/dev/src/shop", list: []ipc.Checkpoint{
				{ID: "c0ffee00c0ffee00", SessionID: "a1x2c3d4", Time: t0.Add(-4 * time.Minute), FilesChanged: 2, Summary: "Turn \"Fix rounding\": 2 files changed"},
				{ID: "deadbeefdeadbeef", SessionID: "a1x2c3d4", Time: t0.Add(-34 * time.Minute), FilesChanged: 1, Summary: "Checkpoint: 1 file changed: cart/total.go"},
			}}), "down")
		}},
		{"restore_confirm_80x24", 80, 24, Options{}, func(t *testing.T, m model) model {
			m = press(t, m, "r")
			return press(t, send(t, m, checkpointsMsg{dir: "/home/dev/src/shop", list: []ipc.Checkpoint{
				{ID: "deadbeefdeadbeef", SessionID: "a1x2c3d4", Time: t0.Add(-34 * time.Minute), FilesChanged: 1},
			}}), "enter")
		}},
		{"logs_80x24", 80, 24, Options{}, func(t *testing.T, m model) model {
			m = press(t, m, "l")
			m.pager.f = &follower{id: "a1x2c3d4"}
			var lines []string
			for i := 1; i <= 40; i++ {
				lines = append(lines, "step "+strings.Repeat("=", i%10)+">")
			}
			return send(t, m, logMsg{f: m.pager.f, lines: lines})
		}},
		{"narrow_60x16", 60, 16, Options{}, func(t *testing.T, m model) model { return m }},
		{"tiny_30x6", 30, 6, Options{}, func(t *testing.T, m model) model { return m }},
		{"huge_200x50", 200, 50, Options{}, func(t *testing.T, m model) model {
			return send(t, m, output(m, "compiling cart", "ok  shop/cart 0.412s"),
				checkpointsMsg{dir: "/home/dev/src/shop", list: []ipc.Checkpoint{
					{ID: "c0ffee00c0ffee00", SessionID: "a1x2c3d4", Time: t0.Add(-4 * time.Minute), FilesChanged: 2, Turn: "Fix rounding"},
					{ID: "deadbeefdeadbeef", SessionID: "a1x2c3d4", Time: t0.Add(-34 * time.Minute), FilesChanged: 1},
				}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.do(t, newTestModel(t, tt.width, tt.height, tt.opt))
			golden(t, m, tt.name)
		})
	}
}

// TestEveryWindowSize renders every screen at sizes from tiny to huge:
// no line may be wider than the window, and the view fills its height.
func TestEveryWindowSize(t *testing.T) {
	for _, keys := range [][]string{nil, {"3"}, {"?"}, {"l"}, {"r"}, {"s"}, {"e"}, {"/"}} {
		for w := 1; w <= 260; w += 7 {
			for _, h := range []int{1, 2, 5, 10, 24, 60} {
				m := press(t, newTestModel(t, w, h, Options{}), keys...)
				lines := strings.Split(screen(m), "\n")
				if len(lines) != h {
					t.Fatalf("keys %v at %dx%d: %d lines", keys, w, h, len(lines))
				}
				for i, l := range lines {
					if ansi.StringWidth(l) > w {
						t.Fatalf("keys %v at %dx%d: line %d is %d cells: %q", keys, w, h, i, ansi.StringWidth(l), l)
					}
				}
			}
		}
	}
}

func TestResizeRedraws(t *testing.T) {
	m := newTestModel(t, 80, 24, Options{})
	if strings.Contains(screen(m), "PROJECT") {
		t.Fatalf("80 columns have no room for PROJECT:\n%s", screen(m))
	}
	m = send(t, m, tea.WindowSizeMsg{Width: 160, Height: 40})
	got := screen(m)
	if !strings.Contains(got, "PROJECT") || !strings.Contains(got, "/home/dev/src/shop [cart]") {
		t.Errorf("160 columns should show the project column:\n%s", got)
	}
	if n := len(strings.Split(got, "\n")); n != 40 {
		t.Errorf("after the resize the view has %d lines, want 40", n)
	}
}

func TestColourAndNoColour(t *testing.T) {
	coloured := newTestModel(t, 80, 24, Options{}).View().Content
	if !strings.Contains(coloured, "\x1b[32m") {
		t.Errorf("a running session's state should be green (SGR 32):\n%q", coloured)
	}
	plain := newTestModel(t, 80, 24, Options{NoColor: true}).View().Content
	for _, sgr := range []string{"\x1b[3", "\x1b[9", "38;", "48;"} {
		if strings.Contains(plain, sgr) {
			t.Errorf("with NoColor the view holds the colour sequence %q:\n%q", sgr, plain)
		}
	}
	if !strings.Contains(plain, "\x1b[7m") {
		t.Errorf("with NoColor the selection is still in reverse video:\n%q", plain)
	}
	if ansi.Strip(plain) != ansi.Strip(coloured) {
		t.Errorf("colour must not change the text")
	}
}

func TestSelectionFollowsTheSession(t *testing.T) {
	m := press(t, newTestModel(t, 80, 24, Options{}), "3", "home", "down")
	if m.selected != "c9k0m1n2" {
		t.Fatalf("selected %s, want the second session started, c9k0m1n2", m.selected)
	}
	m = press(t, m, "o") // by name: alpha beta delta eps gamma
	if m.selected != "c9k0m1n2" {
		t.Errorf("after sorting the selection moved to %s", m.selected)
	}
	if !strings.Contains(screen(m), "▸ gamma") {
		t.Errorf("gamma should be marked selected:\n%s", screen(m))
	}
	m = press(t, m, "O")
	vis := m.visible()
	if vis[0].Name != "gamma" || vis[len(vis)-1].Name != "alpha" {
		t.Errorf("O should reverse the order, got %s first and %s last", vis[0].Name, vis[len(vis)-1].Name)
	}
	// The selected session ends and leaves the live tab: the selection
	// moves to the row that takes its place.
	m = press(t, m, "1", "home")
	ended := fixture()[0]
	ended.State, ended.EndReason, ended.Seq = ipc.StateEnded, ipc.EndComplete, 11
	m = send(t, m, recordMsg{id: ended.ID, s: &ended})
	if m.selected != "b5y6z7w8" {
		t.Errorf("after alpha ended the selection is %q, want beta", m.selected)
	}
}

func TestRecordsInOrder(t *testing.T) {
	m := newTestModel(t, 80, 24, Options{})
	old := fixture()[0]
	old.Seq, old.State = 9, ipc.StateStarting
	m = send(t, m, recordMsg{id: old.ID, s: &old})
	if got := m.sessions[old.ID].State; got != ipc.StateRunning {
		t.Errorf("an older record (seq 9 < 10) replaced the newer: state %s", got)
	}
	newer := fixture()[0]
	newer.Seq, newer.State = 11, ipc.StateWarned
	m = send(t, m, recordMsg{id: newer.ID, s: &newer})
	if got := m.sessions[newer.ID].State; got != ipc.StateWarned {
		t.Errorf("a newer record was not taken: state %s", got)
	}
	m = send(t, m, recordMsg{id: newer.ID, err: ipc.NotFound("no session %s", newer.ID)})
	if _, ok := m.sessions[newer.ID]; ok {
		t.Errorf("a removed session stays listed")
	}
}

func TestRestartTakesThePredecessorsRow(t *testing.T) {
	m := newTestModel(t, 80, 24, Options{})
	next := fixture()[1]
	next.ID, next.RestartOf, next.Restarts, next.State, next.Seq = "b9999999", "b5y6z7w8", 2, ipc.StateRunning, 1
	m = press(t, m, "down")
	m = send(t, m, recordMsg{id: next.ID, s: &next})
	if _, ok := m.sessions["b5y6z7w8"]; ok {
		t.Errorf("the restarted session is still listed beside its successor")
	}
	if m.selected != "b9999999" {
		t.Errorf("the selection should move to the successor, is %q", m.selected)
	}
}

func TestEventsFetchOneAtATime(t *testing.T) {
	m := newTestModel(t, 80, 24, Options{})
	m.conn = &conn{ctx: t.Context(), client: &ipc.Client{Socket: filepath.Join(t.TempDir(), "none.sock")}}
	m.online = false // no follower is started: only the fetches are looked at
	ev := ipc.Event{Type: ipc.EventActivity, SessionID: "a1x2c3d4"}
	if cmd := m.onEvent(ev); cmd == nil {
		t.Fatal("the first event should fetch the record")
	}
	if cmd := m.onEvent(ev); cmd != nil {
		t.Fatal("a second event while the fetch is in flight should wait for it")
	}
	if !m.fetching["a1x2c3d4"] {
		t.Fatal("the second event should be remembered")
	}
	next, cmd := m.feed(recordMsg{id: "a1x2c3d4", s: &fixture()[0]})
	if cmd == nil {
		t.Fatalf("after the answer, the remembered event should fetch again")
	}
	if again, inFlight := next.fetching["a1x2c3d4"]; !inFlight || again {
		t.Errorf("the second fetch should be in flight with nothing pending: in flight %v, again %v", inFlight, again)
	}
	next, cmd = next.feed(recordMsg{id: "a1x2c3d4", s: &fixture()[0]})
	if _, inFlight := next.fetching["a1x2c3d4"]; cmd != nil || inFlight {
		t.Errorf("with nothing pending the answer ends the fetching")
	}
}

// TestMissedEventsListAgain: a missed event in the stream (the dashboard
// fell behind a burst) lists the sessions again, the stream going on: the
// rows are the daemon's list, a session it no longer has gone.
func TestMissedEventsListAgain(t *testing.T) {
	m := newTestModel(t, 80, 24, Options{})
	m.conn = &conn{ctx: t.Context(), client: &ipc.Client{Socket: filepath.Join(t.TempDir(), "none.sock")}}
	m, cmd := m.feed(eventMsg{ev: ipc.Event{Type: ipc.EventMissed, Message: "40 events missed"}})
	if cmd == nil {
		t.Fatal("a missed event should list the sessions again and read on")
	}
	if len(m.fetching) != 0 {
		t.Errorf("a missed event is about no session, yet fetches %v", m.fetching)
	}
	newer := fixture()[0]
	newer.ID, newer.Name, newer.Seq = "n3w5e55n", "gamma", 1
	m = send(t, m, listedMsg{sessions: []ipc.Session{fixture()[0], newer}})
	got := screen(m)
	if !strings.Contains(got, "alpha") || !strings.Contains(got, "gamma") || strings.Contains(got, "beta") {
		t.Errorf("after the new list the rows should be alpha and gamma only:\n%s", got)
	}
	if !m.online {
		t.Errorf("listing again should leave the dashboard online")
	}
}

func TestDaemonGoneAndBack(t *testing.T) {
	m := newTestModel(t, 80, 24, Options{})
	m = send(t, m, offlineMsg{err: &ipc.UnreachableError{Socket: "/run/user/1000/sessiond.sock", Err: errors.New("connect: no such file or directory")}})
	got := screen(m)
	for _, want := range []string{"offline", "sessiond is not reachable on /run/user/1000/sessiond.sock", "retrying", "alpha"} {
		if !strings.Contains(got, want) {
			t.Errorf("offline view lacks %q:\n%s", want, got)
		}
	}
	list := fixture()[:1]
	m = send(t, m, connectedMsg{sessions: list})
	got = screen(m)
	if strings.Contains(got, "offline") || strings.Contains(got, "beta") {
		t.Errorf("after reconnecting the view should show the daemon's new list only:\n%s", got)
	}
}

func TestStopAsksFirst(t *testing.T) {
	m := press(t, newTestModel(t, 80, 24, Options{}), "s")
	if m.mode != modeConfirm || !strings.Contains(screen(m), "$ sessionctl stop a1x2c3d4") {
		t.Fatalf("s should ask, naming the command:\n%s", screen(m))
	}
	m = press(t, m, "n")
	if m.mode != modeList || !strings.Contains(screen(m), "cancelled: sessionctl stop a1x2c3d4") {
		t.Errorf("n should cancel:\n%s", screen(m))
	}
	m = press(t, m, "s", "y")
	if !strings.Contains(screen(m), "… $ sessionctl stop a1x2c3d4") {
		t.Errorf("y should run the stop and say so:\n%s", screen(m))
	}
	m = send(t, m, actionMsg{command: "sessionctl stop a1x2c3d4", err: ipc.Conflict("session a1x2c3d4 is stopping already")})
	if !strings.Contains(screen(m), "✗ $ sessionctl stop a1x2c3d4: session a1x2c3d4 is stopping already") {
		t.Errorf("a failed action should say why:\n%s", screen(m))
	}
	ended := press(t, m, "2", "s")
	if ended.mode != modeList || !strings.Contains(screen(ended), "has ended already") {
		t.Errorf("stopping an ended session should not ask:\n%s", screen(ended))
	}
}

func TestExtendChecksTheDuration(t *testing.T) {
	m := press(t, newTestModel(t, 80, 24, Options{}), "e", "backspace", "backspace", "backspace")
	m = press(t, typeText(t, m, "soon"), "enter")
	if m.mode != modePrompt || !strings.Contains(screen(m), "want a duration such as 30m or 1h") {
		t.Fatalf("a bad duration should be refused in the prompt:\n%s", screen(m))
	}
	m = press(t, m, "ctrl+u")
	m = send(t, m, tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl})
	m = press(t, typeText(t, m, "45m"), "enter")
	if m.mode != modeList || !strings.Contains(screen(m), "… $ sessionctl extend a1x2c3d4 45m") {
		t.Errorf("a good duration should run the extend:\n%s", screen(m))
	}
	m = press(t, m, "e", "esc")
	if m.mode != modeList || !strings.Contains(screen(m), "cancelled") {
		t.Errorf("esc should cancel the prompt:\n%s", screen(m))
	}
}

func TestSignalRunsKill(t *testing.T) {
	m := press(t, typeText(t, press(t, newTestModel(t, 80, 24, Options{}), "k"), "int"), "enter")
	if !strings.Contains(screen(m), "… $ sessionctl kill -s SIGINT a1x2c3d4") {
		t.Errorf("the signal should run sessionctl kill:\n%s", screen(m))
	}
}

func TestAttach(t *testing.T) {
	m := press(t, newTestModel(t, 80, 24, Options{Executable: "/usr/bin/sessionctl"}), "down", "a")
	if !strings.Contains(screen(m), "beta (b5y6z7w8) has no terminal to attach to") {
		t.Errorf("a session without a terminal cannot be attached:\n%s", screen(m))
	}
	m = press(t, m, "up")
	next, cmd := m.Update(keyMsg("a"))
	m = next.(model)
	if cmd == nil || !strings.Contains(screen(m), "$ sessionctl attach a1x2c3d4") {
		t.Errorf("a terminal session should be attached with sessionctl attach:\n%s", screen(m))
	}
	m = send(t, m, attachedMsg{id: "a1x2c3d4", err: errors.New("exit status 1"), stderr: "sessionctl: session a1x2c3d4 has ended\n"})
	if !strings.Contains(screen(m), "✗ $ sessionctl attach a1x2c3d4: session a1x2c3d4 has ended") {
		t.Errorf("a failed attach should say why, from its stderr:\n%s", screen(m))
	}
	m = send(t, m, attachedMsg{id: "a1x2c3d4"})
	if !strings.Contains(screen(m), "✓ $ sessionctl attach a1x2c3d4: detached") {
		t.Errorf("back from attach:\n%s", screen(m))
	}
	m = send(t, m, attachedMsg{id: "a1x2c3d4", stderr: "\n[the command of a1x2c3d4 ended: exit code 5]\n"})
	if !strings.Contains(screen(m), "✓ $ sessionctl attach a1x2c3d4: the command of a1x2c3d4 ended: exit code 5") {
		t.Errorf("back from an attach whose command ended, the status should say so:\n%s", screen(m))
	}
}

func TestQuit(t *testing.T) {
	for _, k := range []string{"q", "ctrl+c"} {
		_, cmd := newTestModel(t, 80, 24, Options{}).Update(keyMsg(k))
		if cmd == nil {
			t.Fatalf("%s: no command", k)
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Errorf("%s should quit", k)
		}
	}
	// In the filter, q is text; ctrl+c still quits.
	m := press(t, newTestModel(t, 80, 24, Options{}), "/", "q")
	if m.filter != "q" {
		t.Errorf("q in the filter should be typed, filter is %q", m.filter)
	}
}

func TestStartRequestKeepsTheSpec(t *testing.T) {
	s := fixture()[0]
	sig, _ := config.ParseSignal("SIGTERM")
	s.Spec = &config.Spec{
		Command: []string{"claude", "-p", "fix the cart"}, Timeout: config.Duration{Duration: 4 * time.Hour},
		WarnBefore: config.Duration{Duration: 30 * time.Minute}, StopSignal: sig, StopGrace: config.Duration{Duration: 30 * time.Second},
		Checkpoint: "@every 5m", Restart: config.RestartOnFailure,
	}
	req, args := startRequest(&s)
	got := commandLine(args)
	want := "start --name alpha --tty --timeout 4h --warn-before 30m --stop-signal SIGTERM --stop-grace 30s --checkpoint '@every 5m' --restart on-failure /home/dev/src/shop -- claude -p 'fix the cart'"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if req.Dir != s.ProjectDir || req.Timeout != "4h" || req.Checkpoint == nil || *req.Checkpoint != "@every 5m" || req.IdleTimeout != "" {
		t.Errorf("request %+v", req)
	}
	m := newTestModel(t, 80, 24, Options{})
	s.EnvKeys = []string{"API_TOKEN"}
	m = send(t, m, specMsg{purpose: forStart, s: &s})
	if m.mode != modeConfirm || !strings.Contains(screen(m), "API_TOKEN are not kept") {
		t.Errorf("n should ask, saying which env values are lost:\n%s", screen(m))
	}
	m = press(t, m, "y")
	m = send(t, m, actionMsg{command: "sessionctl start …", text: "started f0000000", started: "f0000000"})
	born := fixture()[0]
	born.ID, born.Seq = "f0000000", 1
	m = send(t, m, recordMsg{id: born.ID, s: &born})
	if m.selected != "f0000000" {
		t.Errorf("the new session should be selected once listed, selected %q", m.selected)
	}
}

// TestStartRequestOfATerminalSession: n on a terminal session starts one
// on a terminal again, and a stop signal or warning nobody gave (SIGHUP for
// a terminal, a warning fitted to the timeout) is chosen again, not
// written out.
func TestStartRequestOfATerminalSession(t *testing.T) {
	s := fixture()[0]
	s.TTY = true
	hup, _ := config.ParseSignal("SIGHUP")
	s.Spec = &config.Spec{
		Command: []string{"bash", "-i"}, Timeout: config.Duration{Duration: time.Hour},
		WarnBefore: config.Duration{Duration: 15 * time.Minute}, WarnBeforeAuto: true, StopSignal: hup, StopSignalAuto: true,
		StopGrace: config.Duration{Duration: 30 * time.Second}, Checkpoint: "",
	}
	req, args := startRequest(&s)
	want := "start --name alpha --tty --timeout 1h --stop-grace 30s --checkpoint '' /home/dev/src/shop -- bash -i"
	if got := commandLine(args); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if req.TTY == nil || !*req.TTY || req.StopSignal != "" || req.WarnBefore != "" {
		t.Errorf("request %+v: want a terminal, no stop signal, no warn_before", req)
	}
}

func TestFlagDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		4 * time.Hour: "4h", 30 * time.Minute: "30m", 90 * time.Minute: "1h30m", 30 * time.Second: "30s", 0: "0s", 90 * time.Second: "1m30s",
	} {
		if got := flagDuration(d); got != want {
			t.Errorf("flagDuration(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestBar(t *testing.T) {
	s := &ipc.Session{State: ipc.StateRunning, StartedAt: t0, Deadline: t0.Add(100 * time.Minute), WarnAt: t0.Add(80 * time.Minute)}
	for _, tt := range []struct {
		now  time.Duration
		want string
	}{
		{0, "░░░░░░░░│░"},
		{50 * time.Minute, "█████░░░│░"},
		{90 * time.Minute, "████████│░"},
		{200 * time.Minute, "████████│█"},
	} {
		if got := plainBar(s, 10, t0.Add(tt.now)); got != tt.want {
			t.Errorf("at %s: %q, want %q", tt.now, got, tt.want)
		}
	}
	if got := plainBar(&ipc.Session{StartedAt: t0}, 10, t0); got != barEmpty {
		t.Errorf("no deadline: %q", got)
	}
}

func TestOutputLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain\n":                       "plain",
		"\x1b[1;31mred\x1b[0m text\r\n": "red text",
		"50%\r75%\r100%\n":              "100%",
		"a\tb":                          "a    b",
		"\x1b]0;title\x07after":         "after",
		"bell\x07 and \x1b[2Jclear":     "bell\\x07 and clear",
		"bidi \u202egnp.exe":            "bidi \\u202egnp.exe",
		string([]byte{0xff, 'o', 'k'}):  "ok",
	} {
		if got := outputLine(in); got != want {
			t.Errorf("outputLine(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzOutputLine(f *testing.F) {
	for _, s := range []string{"plain", "\x1b[31mred", "\x1b]8;;http://x\x07link", "a\rb", "\x9b31m", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := outputLine(s)
		for _, r := range got {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				t.Fatalf("outputLine(%q) = %q holds control character %U", s, got, r)
			}
		}
	})
}

func TestField(t *testing.T) {
	var f field
	for _, k := range []string{"a", "b", " ", "c", "d"} {
		f.update(keyMsg(k))
	}
	f.update(tea.KeyPressMsg{Code: 'w', Mod: tea.ModCtrl})
	if f.text() != "ab " {
		t.Errorf("ctrl+w: %q, want %q", f.text(), "ab ")
	}
	f.update(keyMsg("backspace"))
	f.update(tea.PasteMsg{Content: "x\x1by"})
	if f.text() != "abxy" {
		t.Errorf("backspace and paste: %q, want %q", f.text(), "abxy")
	}
	if f.update(keyMsg("up")) {
		t.Errorf("up is not text")
	}
	f.update(tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl})
	if f.text() != "" {
		t.Errorf("ctrl+u: %q", f.text())
	}
	f = field{limit: 3}
	f.update(tea.PasteMsg{Content: "abcdef"})
	if f.text() != "abc" {
		t.Errorf("limit: %q", f.text())
	}
}

func TestLiveOutputIsActivity(t *testing.T) {
	m := newTestModel(t, 80, 24, Options{})
	f := &follower{id: "a1x2c3d4", started: t0.Add(-time.Minute)}
	m.tail.f = f
	when := t0.Add(time.Second)
	m = send(t, m, logMsg{f: f, lines: []string{"new"}, at: when})
	if got := m.sessions["a1x2c3d4"].LastActivity; got == nil || !got.Equal(when) {
		t.Errorf("new output should be the session's last activity, got %v", got)
	}
	backlog := &follower{id: "a1x2c3d4", started: t0.Add(2 * time.Second)}
	m.tail.f = backlog
	m = send(t, m, logMsg{f: backlog, lines: []string{"old"}, at: t0.Add(2*time.Second + 100*time.Millisecond)})
	if got := m.sessions["a1x2c3d4"].LastActivity; !got.Equal(when) {
		t.Errorf("the log's tail is not new activity, got %v", got)
	}
}

// TestRootSeesEveryUser: with sessions of several users (what the daemon
// shows root), the list names each session's user.
func TestRootSeesEveryUser(t *testing.T) {
	m := newModel(Options{Socket: "/run/sessiond/sessiond.sock"})
	m.loc, m.now = time.UTC, t0
	m.users[1000], m.users[1001] = "dev", "ops"
	list := fixture()
	list[1].UID = 1001
	m = send(t, m, tea.WindowSizeMsg{Width: 100, Height: 24}, connectedMsg{sessions: list})
	golden(t, m, "two_users_100x24")
	if r := m.row(layoutColumns(m.columns(), m.width), m.sessions["b5y6z7w8"], false); !strings.Contains(ansi.Strip(r), " ops ") {
		t.Errorf("beta's row should name its user ops: %q", ansi.Strip(r))
	}
	one := newTestModel(t, 100, 24, Options{})
	if strings.Contains(screen(one), "USER") {
		t.Errorf("with one user's sessions there is no USER column:\n%s", screen(one))
	}
}

// The record pane says what a contained session's cgroup said of its
// memory: its peak and the OOM kills at its end.
func TestRecordSaysTheMemoryOfItsCgroup(t *testing.T) {
	m := newTestModel(t, 120, 40, Options{NoColor: true})
	s := fixture()[0]
	s.State, s.EndReason, s.EndedAt = ipc.StateEnded, ipc.EndOOM, at(-time.Minute)
	s.Memory = &ipc.Memory{CurrentBytes: 1 << 20, PeakBytes: 64 << 20, OOMKills: 1}
	text := strings.Join(m.recordLines(&s, 120), "\n")
	if !strings.Contains(text, "memory") || !strings.Contains(text, "peak 64 MiB · 1 OOM kill") || strings.Contains(text, " now") {
		t.Errorf("record pane:\n%s\nwant the peak and the OOM kill of the ended session", text)
	}
	s = fixture()[0]
	if text := strings.Join(m.recordLines(&s, 120), "\n"); strings.Contains(text, "memory") {
		t.Errorf("a session without a memory account shows one:\n%s", text)
	}
}
