package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/ipc"
)

// Messages of the actions.
type (
	// actionMsg is an action's outcome: text on success, else err.
	actionMsg struct {
		command string
		text    string
		err     error
		// dir is a project whose checkpoints changed.
		dir string
		// started is a session the action started, selected once listed.
		started string
	}
	// specMsg is the whole record of a session (with its spec), fetched for
	// inspect or to start its like.
	specMsg struct {
		purpose specPurpose
		s       *ipc.Session
		err     error
	}
	// handoffPageMsg is a handoff fetched for the full screen.
	handoffPageMsg struct {
		id  string
		h   *ipc.Handoff
		err error
	}
	// attachedMsg is the end of sessionctl attach.
	attachedMsg struct {
		id     string
		err    error
		stderr string
	}
)

type specPurpose int

const (
	forInspect specPurpose = iota
	forStart
)

// confirm is a question asked before a destructive action.
type confirm struct {
	question string
	command  string
	run      tea.Cmd
}

func (c confirm) render(m *model) string {
	return m.st.note.Render(c.question) + " " + m.st.key.Render("[y/N]")
}

// promptKind is the argument an action asks for.
type promptKind int

const (
	promptExtend promptKind = iota
	promptSignal
)

// prompt asks for an action's argument in the status line.
type prompt struct {
	kind promptKind
	id   string
	name string
	err  string
}

func (p prompt) command(m *model) string {
	v := strings.TrimSpace(m.input.text())
	if v == "" {
		v = "…"
	}
	if p.kind == promptExtend {
		return m.ctl("extend", p.id, v)
	}
	return m.ctl("kill", "-s", v, p.id)
}

func (p prompt) render(m *model) string {
	q := fmt.Sprintf("Extend %s (%s) by: ", p.name, p.id)
	if p.kind == promptSignal {
		q = fmt.Sprintf("Signal to send to %s (%s): ", p.name, p.id)
	}
	t := m.st.note.Render(q) + m.input.view(&m.st)
	if p.err != "" {
		return t + "  " + m.st.bad.Render(p.err)
	}
	return t
}

// run makes the command of an action's request; nil when the model is
// not connected to a daemon (tests).
func (m *model) run(timeout time.Duration, f func(ctx context.Context, c *ipc.Client) tea.Msg) tea.Cmd {
	if m.conn == nil {
		return nil
	}
	c := m.conn.client
	return m.conn.call(timeout, func(ctx context.Context) tea.Msg { return f(ctx, c) })
}

// key applies a key press in the current mode.
func (m model) key(msg tea.KeyPressMsg) (model, tea.Cmd) {
	if msg.String() == "ctrl+c" {
		return m.quit()
	}
	switch m.mode {
	case modeFilter:
		return m.filterKey(msg)
	case modePrompt:
		return m.promptKey(msg)
	case modeConfirm:
		return m.confirmKey(msg)
	case modePicker:
		return m.pickerKey(msg)
	case modePager:
		return m.pagerKey(msg)
	}
	return m.listKey(msg)
}

func (m model) listKey(msg tea.KeyPressMsg) (model, tea.Cmd) {
	k := m.keys
	vis := m.visible()
	idx := m.cursor
	rows, _ := m.layout(len(vis))
	move := func(i int) {
		if len(vis) == 0 {
			return
		}
		i = min(max(i, 0), len(vis)-1)
		m.selected, m.cursor = vis[i].ID, i
	}
	switch {
	case key.Matches(msg, k.quit):
		return m.quit()
	case key.Matches(msg, k.up):
		move(idx - 1)
	case key.Matches(msg, k.down):
		move(idx + 1)
	case key.Matches(msg, k.pageUp):
		move(idx - rows)
	case key.Matches(msg, k.pageDown):
		move(idx + rows)
	case key.Matches(msg, k.home):
		move(0)
	case key.Matches(msg, k.end):
		move(len(vis) - 1)
	case key.Matches(msg, k.nextTab):
		m.tab = (m.tab + 1) % tabCount
	case key.Matches(msg, k.prevTab):
		m.tab = (m.tab + tabCount - 1) % tabCount
	case key.Matches(msg, k.live):
		m.tab = tabLive
	case key.Matches(msg, k.ended):
		m.tab = tabEnded
	case key.Matches(msg, k.all):
		m.tab = tabAll
	case key.Matches(msg, k.filter):
		m.mode = modeFilter
		m.input = field{limit: 200}
		m.input.set(m.filter)
	case key.Matches(msg, k.clear):
		m.filter = ""
	case key.Matches(msg, k.order):
		m.order = (m.order + 1) % orderCount
	case key.Matches(msg, k.reverse):
		m.desc = !m.desc
	case key.Matches(msg, k.help):
		m.openHelp()
	default:
		return m.sessionKey(msg)
	}
	return m, nil
}

// sessionKey applies the keys that act on the selected session.
func (m model) sessionKey(msg tea.KeyPressMsg) (model, tea.Cmd) {
	k := m.keys
	if !key.Matches(msg, k.inspect, k.logs, k.attach, k.stop, k.signal, k.extend, k.checkpoint, k.restore, k.handoff, k.start) {
		return m, nil
	}
	s := m.sessions[m.selected]
	if s == nil {
		m.status = info("no session is selected")
		return m, nil
	}
	name := displayName(s)
	switch {
	case key.Matches(msg, k.inspect):
		m.status = running(m.ctl("inspect", s.ID))
		return m, m.run(requestTimeout, func(ctx context.Context, c *ipc.Client) tea.Msg {
			rec, err := c.Session(ctx, s.ID)
			return specMsg{purpose: forInspect, s: rec, err: err}
		})
	case key.Matches(msg, k.logs):
		return m.openLogs(s)
	case key.Matches(msg, k.attach):
		return m.attach(s)
	case key.Matches(msg, k.stop):
		if !ipc.Live(s.State) {
			m.status = info(fmt.Sprintf("%s (%s) has ended already", name, s.ID))
			return m, nil
		}
		command := m.ctl("stop", s.ID)
		id := s.ID
		m.mode = modeConfirm
		m.confirm = confirm{
			question: fmt.Sprintf("Stop %s (%s)? Its stop signal, then SIGKILL after the grace.", name, s.ID),
			command:  command,
			run: m.run(stopTimeout, func(ctx context.Context, c *ipc.Client) tea.Msg {
				rec, err := c.Stop(ctx, id, ipc.StopRequest{})
				if err != nil {
					return actionMsg{command: command, err: err}
				}
				text := "ended: " + endText(rec)
				if rec.HandoffPath != "" {
					text += " · handoff " + line(rec.HandoffPath)
				}
				return actionMsg{command: command, text: text}
			}),
		}
	case key.Matches(msg, k.signal, k.extend):
		if !ipc.Live(s.State) {
			m.status = info(fmt.Sprintf("%s (%s) has ended: there is nothing to signal or extend", name, s.ID))
			return m, nil
		}
		m.mode = modePrompt
		m.prompt = prompt{kind: promptSignal, id: s.ID, name: name}
		m.input = field{limit: 32}
		if key.Matches(msg, k.extend) {
			m.prompt.kind = promptExtend
			m.input.set("30m")
		}
	case key.Matches(msg, k.checkpoint):
		command := m.ctl("checkpoint", s.ID)
		id, dir := s.ID, s.ProjectDir
		m.status = running(command)
		return m, m.run(requestTimeout*4, func(ctx context.Context, c *ipc.Client) tea.Msg {
			res, err := c.Checkpoint(ctx, id)
			if err != nil {
				return actionMsg{command: command, err: err}
			}
			text := fmt.Sprintf("checkpoint %s: %s changed", shortID(res.ID), plural(res.FilesChanged, "file"))
			if res.Skipped {
				text = "nothing changed since checkpoint " + shortID(res.ID)
			}
			return actionMsg{command: command, text: text, dir: dir}
		})
	case key.Matches(msg, k.restore):
		return m.openRestore(s)
	case key.Matches(msg, k.handoff):
		command := m.ctl("handoff", s.ID)
		id := s.ID
		m.status = running(command)
		return m, m.run(requestTimeout, func(ctx context.Context, c *ipc.Client) tea.Msg {
			h, err := c.Handoff(ctx, id)
			return handoffPageMsg{id: id, h: h, err: err}
		})
	case key.Matches(msg, k.start):
		id := s.ID
		m.status = running(m.ctl("inspect", s.ID))
		return m, m.run(requestTimeout, func(ctx context.Context, c *ipc.Client) tea.Msg {
			rec, err := c.Session(ctx, id)
			return specMsg{purpose: forStart, s: rec, err: err}
		})
	}
	return m, nil
}

func (m model) filterKey(msg tea.KeyPressMsg) (model, tea.Cmd) {
	switch msg.String() {
	case "enter":
		m.mode = modeList
		return m, nil
	case "esc":
		m.mode = modeList
		m.filter = ""
		return m, nil
	case "up", "down", "pgup", "pgdown":
		return m.listKey(msg)
	}
	m.input.update(msg)
	m.filter = m.input.text()
	return m, nil
}

func (m model) promptKey(msg tea.KeyPressMsg) (model, tea.Cmd) {
	switch msg.String() {
	case "esc":
		m.mode = modeList
		m.status = info("cancelled")
		return m, nil
	case "enter":
		return m.submitPrompt()
	}
	if m.input.update(msg) {
		m.prompt.err = ""
	}
	return m, nil
}

// submitPrompt checks the argument and runs the action.
func (m model) submitPrompt() (model, tea.Cmd) {
	p := m.prompt
	v := strings.TrimSpace(m.input.text())
	command := p.command(&m)
	switch p.kind {
	case promptExtend:
		d, err := config.ParseDuration(v)
		if err != nil || d.Duration <= 0 {
			m.prompt.err = "want a duration such as 30m or 1h"
			return m, nil
		}
		m.mode = modeList
		m.status = running(command)
		return m, m.run(requestTimeout, func(ctx context.Context, c *ipc.Client) tea.Msg {
			rec, err := c.Extend(ctx, p.id, v)
			if err != nil {
				return actionMsg{command: command, err: err}
			}
			return actionMsg{command: command, text: "deadline now " + rec.Deadline.In(m.loc).Format("15:04:05") +
				" (" + span(time.Until(rec.Deadline)) + " left)"}
		})
	default:
		sig, err := config.ParseSignal(v)
		if err != nil || sig.Num == 0 {
			m.prompt.err = "want a signal such as INT, TERM, HUP, USR1 or a number"
			return m, nil
		}
		command = m.ctl("kill", "-s", sig.Name, p.id)
		m.mode = modeList
		m.status = running(command)
		return m, m.run(requestTimeout, func(ctx context.Context, c *ipc.Client) tea.Msg {
			if err := c.Signal(ctx, p.id, sig.Name); err != nil {
				return actionMsg{command: command, err: err}
			}
			return actionMsg{command: command, text: "sent " + sig.Name + " to the session's process group"}
		})
	}
}

func (m model) confirmKey(msg tea.KeyPressMsg) (model, tea.Cmd) {
	m.mode = modeList
	if msg.String() == "y" || msg.String() == "Y" {
		m.status = running(m.confirm.command)
		return m, m.confirm.run
	}
	m.status = info("cancelled: " + m.confirm.command)
	return m, nil
}

// attach runs sessionctl attach on the terminal, the dashboard paused
// until it detaches.
func (m model) attach(s *ipc.Session) (model, tea.Cmd) {
	name := displayName(s)
	switch {
	case !s.TTY:
		m.status = info(fmt.Sprintf("%s (%s) has no terminal to attach to: it was not started with tty = true (l shows its output)", name, s.ID))
		return m, nil
	case !ipc.Live(s.State):
		m.status = info(fmt.Sprintf("%s (%s) has ended: its terminal is gone (l shows its output)", name, s.ID))
		return m, nil
	case m.opt.Executable == "":
		m.status = status{kind: statusFailed, command: m.ctl("attach", s.ID), text: "the sessionctl binary is not known"}
		return m, nil
	}
	m.status = running(m.ctl("attach", s.ID) + "   (ctrl-] detaches)")
	stderr := &boundedBuffer{max: 8 << 10}
	where := []string{"--socket", m.opt.Socket}
	switch {
	case s.Host != "":
		where = []string{"--context", s.Host}
	case m.opt.Host != "":
		where = []string{"--host", m.opt.Host}
	}
	c := exec.Command(m.opt.Executable, append(where, "attach", s.ID)...)
	c.Stderr = stderr
	id := s.ID
	return m, tea.Exec(&attachRun{Cmd: c}, func(err error) tea.Msg {
		return attachedMsg{id: id, err: err, stderr: stderr.String()}
	})
}

// attachRun is sessionctl attach run by the dashboard. Its detach line
// goes to the dashboard's status, not the terminal, so the attached
// screen's last line has no end: attachRun ends it, so that what the
// terminal shows once the dashboard quits (the attached screen, then the
// shell's prompt) is line by line, as after sessionctl attach alone.
type attachRun struct {
	*exec.Cmd
}

func (a *attachRun) SetStdin(r io.Reader) {
	if a.Stdin == nil {
		a.Stdin = r
	}
}

func (a *attachRun) SetStdout(w io.Writer) {
	if a.Stdout == nil {
		a.Stdout = w
	}
}

func (a *attachRun) SetStderr(w io.Writer) {
	if a.Stderr == nil {
		a.Stderr = w
	}
}

func (a *attachRun) Run() error {
	err := a.Cmd.Run()
	if a.Stdout != nil {
		_, _ = io.WriteString(a.Stdout, "\r\n")
	}
	return err
}

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string { return b.buf.String() }

// action applies the outcome of an action.
func (m model) action(msg tea.Msg) (model, tea.Cmd) {
	switch msg := msg.(type) {
	case actionMsg:
		if msg.err != nil {
			m.status = status{kind: statusFailed, command: msg.command, text: errorText(msg.err)}
		} else {
			m.status = status{kind: statusDone, command: msg.command, text: msg.text}
		}
		if msg.dir != "" {
			delete(m.checkpoints, msg.dir)
		}
		if msg.started != "" {
			if m.sessions[msg.started] != nil {
				m.selected = msg.started
			} else {
				m.pendingSelect = msg.started
			}
			return m, m.fetch(msg.started)
		}
	case attachedMsg:
		command := m.ctl("attach", msg.id)
		if msg.err != nil {
			text := firstLine(msg.stderr)
			if text == "" {
				text = line(msg.err.Error())
			}
			m.status = status{kind: statusFailed, command: command, text: strings.TrimPrefix(text, "sessionctl: ")}
		} else {
			// What attach said of its end: detached, or the command
			// ended, and how.
			text := "detached"
			if l := lastLine(msg.stderr); strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]") {
				text = l[1 : len(l)-1]
			}
			m.status = status{kind: statusDone, command: command, text: text}
		}
	case handoffPageMsg:
		command := m.ctl("handoff", msg.id)
		if msg.err != nil {
			m.status = status{kind: statusFailed, command: command, text: errorText(msg.err)}
			return m, nil
		}
		m.status = status{kind: statusDone, command: command, text: "shown"}
		m.openPage(pageHandoff, "handoff of "+msg.id, command, jsonLines(msg.h))
	case specMsg:
		return m.gotSpec(msg)
	}
	return m, nil
}

// gotSpec opens the record (inspect) or asks to start a session like it.
func (m model) gotSpec(msg specMsg) (model, tea.Cmd) {
	if msg.err != nil {
		m.status = status{kind: statusFailed, command: m.status.command, text: errorText(msg.err)}
		return m, nil
	}
	s := msg.s
	if msg.purpose == forInspect {
		command := m.ctl("inspect", s.ID)
		m.status = status{kind: statusDone, command: command, text: "shown"}
		m.openPage(pageInspect, "record of "+s.ID, command, jsonLines(s))
		return m, nil
	}
	req, args := startRequest(s)
	command := m.ctl(args...)
	question := fmt.Sprintf("Start a new session in %s with the spec of %s?", line(s.ProjectDir), s.ID)
	if len(s.EnvKeys) > 0 {
		question += fmt.Sprintf(" (the values of %s are not kept, so it starts without them)", line(strings.Join(s.EnvKeys, ", ")))
	}
	m.status = status{}
	m.mode = modeConfirm
	m.confirm = confirm{question: question, command: command,
		run: m.run(requestTimeout*4, func(ctx context.Context, c *ipc.Client) tea.Msg {
			resp, err := c.Start(ctx, req)
			if err != nil {
				return actionMsg{command: command, err: err}
			}
			return actionMsg{command: command, text: "started " + resp.Session.ID, started: resp.Session.ID}
		})}
	return m, nil
}

// startRequest is the request, and the sessionctl start arguments, that
// start a session with the spec of s in its project, in the environment of
// the dashboard's shell. --env values are not in the record, so they
// cannot be given again.
func startRequest(s *ipc.Session) (ipc.StartRequest, []string) {
	req := ipc.StartRequest{Dir: s.ProjectDir, Name: s.Name, Command: s.Command, Environ: os.Environ()}
	args := []string{"start"}
	flag := func(name, v string) {
		if v != "" {
			args = append(args, "--"+name, v)
		}
	}
	flag("name", s.Name)
	if s.TTY {
		tty := true
		req.TTY = &tty
		args = append(args, "--tty")
	}
	if sp := s.Spec; sp != nil {
		if len(sp.Command) > 0 {
			req.Command = sp.Command
		}
		req.Timeout = flagDuration(sp.Timeout.Duration)
		if !sp.WarnBeforeAuto {
			req.WarnBefore = flagDuration(sp.WarnBefore.Duration)
		}
		req.WarnSignal = sp.WarnSignal.Name
		req.WarnSignalForce = sp.WarnSignalForce
		req.OnWarning = sp.OnWarning
		if !sp.StopSignalAuto {
			// One nobody gave (SIGHUP for a terminal's) is chosen again.
			req.StopSignal = sp.StopSignal.Name
		}
		req.StopGrace = flagDuration(sp.StopGrace.Duration)
		if sp.IdleTimeout.Duration > 0 {
			req.IdleTimeout = flagDuration(sp.IdleTimeout.Duration)
		}
		checkpoint := sp.Checkpoint
		req.Checkpoint = &checkpoint
		req.Restart = sp.Restart
		if !sp.InheritsEnv() {
			req.Environ, req.InheritEnv = nil, sp.InheritEnv
		}
		flag("timeout", req.Timeout)
		flag("warn-before", req.WarnBefore)
		flag("warn-signal", req.WarnSignal)
		if req.WarnSignalForce {
			args = append(args, "--warn-signal-force")
		}
		flag("on-warning", req.OnWarning)
		flag("stop-signal", req.StopSignal)
		flag("stop-grace", req.StopGrace)
		flag("idle-timeout", req.IdleTimeout)
		args = append(args, "--checkpoint", checkpoint)
		flag("restart", req.Restart)
		if !sp.InheritsEnv() {
			args = append(args, "--no-inherit-env")
		}
	}
	args = append(args, s.ProjectDir)
	if len(req.Command) > 0 {
		args = append(args, "--")
		args = append(args, req.Command...)
	}
	return req, args
}

// flagDuration writes a duration as a flag takes it: 4h, 30m, 1h30m, 0s.
func flagDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// errorText is an error from the daemon as one line.
func errorText(err error) string {
	var un *ipc.UnreachableError
	if errors.As(err, &un) {
		return "sessiond is not reachable on " + line(un.Socket)
	}
	return firstLine(err.Error())
}

// jsonLines is v as sessionctl prints it with --json, line by line, made
// safe for the terminal.
func jsonLines(v any) []string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return []string{line(err.Error())}
	}
	return strings.Split(ipc.TerminalText(string(b)), "\n")
}

// lastLine is the last line of s that is not blank, trimmed.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
