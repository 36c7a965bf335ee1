package ui

import (
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sessiond/sessiond/ipc"
)

// pageKind is what a full screen of text shows.
type pageKind int

const (
	pageLogs pageKind = iota
	pageInspect
	pageHandoff
	pageHelp
)

// Full-screen logs start this many lines back and keep at most pageLines.
const (
	pageTail  = 5000
	pageLines = 20000
)

// pager is a full screen of scrollable text: a session's logs (followed),
// its record, its handoff, or the help. Its lines are plain text.
type pager struct {
	kind    pageKind
	title   string
	command string
	lines   []string
	width   int
	height  int // of the text, without the title and key lines
	top     int // the first line shown
	left    int // the first column shown
	f       *follower
	ended   bool
	err     string
}

func (p *pager) resize(width, height int) {
	bottom := p.atBottom()
	p.width, p.height = width, max(1, height-2)
	p.scroll(0)
	if bottom {
		p.toBottom()
	}
}

func (p *pager) maxTop() int { return max(0, len(p.lines)-p.height) }

func (p *pager) atBottom() bool { return p.top >= p.maxTop() }

func (p *pager) scroll(n int) { p.top = min(max(p.top+n, 0), p.maxTop()) }

func (p *pager) toBottom() { p.top = p.maxTop() }

// add appends output lines; a pager at its bottom stays there.
func (p *pager) add(lines []string) {
	bottom := p.atBottom()
	before := len(p.lines)
	p.lines = appendCapped(p.lines, lines, pageLines)
	if dropped := before + len(lines) - len(p.lines); dropped > 0 {
		p.top = max(0, p.top-dropped)
	}
	if bottom {
		p.toBottom()
	}
}

func (p *pager) render(m *model) []string {
	title := p.title
	if p.kind == pageLogs {
		switch {
		case p.err != "":
			title += " (" + line(p.err) + ")"
		case p.ended:
			title += " (ended)"
		default:
			title += " (following)"
		}
	}
	if len(p.lines) > p.height {
		title += fmt.Sprintf(" · %d–%d of %d", p.top+1, min(p.top+p.height, len(p.lines)), len(p.lines))
	}
	out := []string{m.st.title.Render(rule(title, m.width))}
	for i := p.top; i < p.top+p.height; i++ {
		if i < len(p.lines) {
			out = append(out, ansi.Cut(p.lines[i], p.left, p.left+m.width))
		} else {
			out = append(out, "")
		}
	}
	keys := m.st.key.Render("esc") + m.st.faint.Render(" back  ") + m.st.key.Render("↑↓ pgup pgdn ←→") +
		m.st.faint.Render(" scroll  ") + m.st.key.Render("g G") + m.st.faint.Render(" top, end")
	if p.command != "" {
		keys += m.st.faint.Render("  $ ") + p.command
	}
	return append(out, keys)
}

// openPage shows lines full screen.
func (m *model) openPage(kind pageKind, title, command string, lines []string) {
	m.pager.f.stop()
	m.pager = pager{kind: kind, title: title, command: command, lines: lines}
	m.pager.resize(m.width, m.height)
	m.pager.top = 0
	m.mode = modePager
}

// openLogs shows a session's output full screen, following it.
func (m model) openLogs(s *ipc.Session) (model, tea.Cmd) {
	command := m.ctl("logs", "-f", "-n", fmt.Sprint(pageTail), s.ID)
	m.openPage(pageLogs, "logs of "+displayName(s)+" · "+s.ID, command, nil)
	m.status = status{kind: statusDone, command: command, text: "shown"}
	if m.conn == nil {
		return m, nil
	}
	f, cmd := m.conn.follow(s.ID, pageTail)
	m.pager.f = f
	return m, cmd
}

// openHelp shows every key, a column per group, and what the columns mean.
func (m *model) openHelp() {
	var cols [][]string
	for _, group := range m.keys.full() {
		kw := 0
		for _, k := range group {
			kw = max(kw, ansi.StringWidth(k.Help().Key))
		}
		var col []string
		for _, k := range group {
			h := k.Help()
			col = append(col, fit(h.Key, kw)+" "+h.Desc)
		}
		cols = append(cols, col)
	}
	var lines []string
	for i := 0; ; i++ {
		var b strings.Builder
		more := false
		for _, col := range cols {
			w := 0
			for _, c := range col {
				w = max(w, ansi.StringWidth(c))
			}
			cell := ""
			if i < len(col) {
				cell, more = col[i], true
			}
			b.WriteString(fit(cell, w+4))
		}
		if !more {
			break
		}
		lines = append(lines, strings.TrimRight(b.String(), " "))
	}
	lines = append(lines, "",
		"The list holds the sessions sessiond shows you (root sees everyone's),",
		"in three views: live, ended and all.",
		"TIME   the time used until the deadline; │ marks the warning",
		"LEFT   the time to the deadline",
		"LAST   the time since the last output or file change",
		"CKPT   checkpoints taken · RST restarts · TOKENS the agent's tokens",
		"",
		"Every action shows the sessionctl command that does the same; stop,",
		"signal, restore and a new session ask first. Attach is for terminal",
		"sessions (tty = true): ctrl-] detaches and brings the dashboard back.",
		"The dashboard follows the daemon's events; when sessiond goes away it",
		"says so, and reconnects when it answers again.")
	m.openPage(pageHelp, "help", "", lines)
}

func (m model) pagerKey(msg tea.KeyPressMsg) (model, tea.Cmd) {
	p := &m.pager
	switch msg.String() {
	case "esc", "q", "?":
		p.f.stop()
		m.pager = pager{}
		m.mode = modeList
	case "up", "k", "ctrl+p":
		p.scroll(-1)
	case "down", "j", "ctrl+n", "enter":
		p.scroll(1)
	case "pgup", "b":
		p.scroll(-p.height)
	case "pgdown", "space", "f":
		p.scroll(p.height)
	case "u", "ctrl+u":
		p.scroll(-p.height / 2)
	case "d", "ctrl+d":
		p.scroll(p.height / 2)
	case "g", "home":
		p.top = 0
	case "G", "end":
		p.toBottom()
	case "left", "h":
		p.left = max(0, p.left-8)
	case "right", "l":
		p.left += 8
	}
	return m, nil
}

// picker chooses the checkpoint of a project to restore.
type picker struct {
	dir     string
	session string
	list    []ipc.Checkpoint
	err     string
	loading bool
	index   int
	top     int
}

func (p *picker) loaded(list []ipc.Checkpoint, err error) {
	p.loading = false
	p.list = list
	p.err = ""
	if err != nil {
		p.err = errorText(err)
	}
	p.index = min(p.index, max(0, len(list)-1))
}

// openRestore lists the project's checkpoints to choose from.
func (m model) openRestore(s *ipc.Session) (model, tea.Cmd) {
	if s.ProjectDir == "" {
		m.status = info("the session has no project")
		return m, nil
	}
	m.mode = modePicker
	m.picker = picker{dir: s.ProjectDir, session: s.ID, loading: true}
	if r, ok := m.checkpoints[s.ProjectDir]; ok && !r.loading {
		m.picker.loaded(r.list, r.err)
	}
	m.status = status{kind: statusDone, command: m.ctl("checkpoints", s.ProjectDir), text: "listed"}
	delete(m.checkpoints, s.ProjectDir)
	if m.conn == nil {
		return m, nil
	}
	m.checkpoints[s.ProjectDir] = checkpointsResult{loading: true}
	return m, m.conn.checkpoints(s.ProjectDir)
}

func (p *picker) render(m *model) []string {
	out := []string{m.st.title.Render(rule("restore "+line(p.dir)+" to a checkpoint", m.width)),
		m.st.faint.Render("The current tree is checkpointed first, so the restore can be undone.")}
	rows := max(1, m.height-4)
	switch {
	case p.err != "":
		out = append(out, m.st.bad.Render(p.err))
	case len(p.list) == 0 && p.loading:
		out = append(out, m.st.faint.Render("loading the checkpoints…"))
	case len(p.list) == 0:
		out = append(out, "The project has no checkpoint.")
	default:
		if p.index < p.top {
			p.top = p.index
		}
		if p.index >= p.top+rows {
			p.top = p.index - rows + 1
		}
		for i := p.top; i < len(p.list) && i < p.top+rows; i++ {
			c := p.list[i]
			t := fmt.Sprintf("%s  %s  %-9s %s  %s", shortID(c.ID), m.clock(c.Time), plural(c.FilesChanged, "file"),
				c.SessionID, line(c.Summary))
			if i == p.index {
				out = append(out, m.st.selected.Render(fit("▸ "+t, m.width)))
			} else {
				out = append(out, "  "+t)
			}
		}
	}
	for len(out) < m.height-1 {
		out = append(out, "")
	}
	return append(out, m.st.key.Render("↑↓")+m.st.faint.Render(" choose  ")+m.st.key.Render("⏎")+
		m.st.faint.Render(" restore  ")+m.st.key.Render("esc")+m.st.faint.Render(" back"))
}

func (m model) pickerKey(msg tea.KeyPressMsg) (model, tea.Cmd) {
	p := &m.picker
	switch msg.String() {
	case "esc", "q":
		m.mode = modeList
		return m, nil
	case "up", "ctrl+p":
		p.index = max(0, p.index-1)
	case "down", "ctrl+n":
		p.index = min(max(0, len(p.list)-1), p.index+1)
	case "home", "g":
		p.index = 0
	case "end", "G":
		p.index = max(0, len(p.list)-1)
	case "enter":
		if len(p.list) == 0 {
			return m, nil
		}
		return m.askRestore(p.dir, p.list[p.index])
	}
	return m, nil
}

// askRestore asks before restoring the project's tree to checkpoint c;
// with a session of the project running, the restore needs force.
func (m model) askRestore(dir string, c ipc.Checkpoint) (model, tea.Cmd) {
	force := false
	for _, s := range m.sessions {
		if s.ProjectDir == dir && ipc.Live(s.State) {
			force = true
		}
	}
	args := []string{"restore", dir, shortID(c.ID)}
	question := fmt.Sprintf("Restore %s to checkpoint %s (%s)?", line(dir), shortID(c.ID), m.clock(c.Time))
	if force {
		args = []string{"restore", "--force", dir, shortID(c.ID)}
		question = fmt.Sprintf("Restore %s to checkpoint %s (%s) while a session runs in it?", line(dir), shortID(c.ID), m.clock(c.Time))
	}
	command := m.ctl(args...)
	id := c.ID
	m.mode = modeConfirm
	m.confirm = confirm{question: question, command: command,
		run: m.run(requestTimeout*4, func(ctx context.Context, cl *ipc.Client) tea.Msg {
			resp, err := cl.Restore(ctx, dir, id, force)
			if err != nil {
				return actionMsg{command: command, err: err, dir: dir}
			}
			return actionMsg{command: command, dir: dir, text: fmt.Sprintf("saved the current tree as checkpoint %s · restored to %s",
				shortID(resp.Saved.ID), shortID(resp.Restored.ID))}
		})}
	return m, nil
}
