package ui

import (
	"errors"
	"fmt"
	"os"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sessiond/sessiond/ipc"
)

// View renders the dashboard: the whole screen, line by line, each cut to
// the window's width.
func (m model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = "sessionctl ui"
	return v
}

// render draws the screen as text.
func (m *model) render() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	var lines []string
	switch m.mode {
	case modePager:
		lines = m.pager.render(m)
	case modePicker:
		lines = m.picker.render(m)
	default:
		lines = m.screen()
	}
	return screenText(lines, m.width, m.height)
}

// screenText makes exactly height lines of at most width cells.
func screenText(lines []string, width, height int) string {
	if len(lines) > height {
		lines = lines[:height]
	}
	var b strings.Builder
	for i := 0; i < height; i++ {
		if i > 0 {
			b.WriteByte('\n')
		}
		if i < len(lines) {
			b.WriteString(clip(lines[i], width))
		}
	}
	return b.String()
}

// rule is a horizontal line with a title: "─ title ──────".
func rule(title string, width int) string {
	head := "─ " + title + " "
	if title == "" {
		head = ""
	}
	head = clip(head, width)
	return head + strings.Repeat("─", max(0, width-ansi.StringWidth(head)))
}

// The fixed lines of the main screen: the header, the column titles, the
// detail pane's title, the status line and the key line.
const fixedLines = 5

// layout divides the height between the list's rows and the detail pane.
func (m *model) layout(sessions int) (rows, detail int) {
	room := m.height - fixedLines
	if room <= 1 {
		return max(room+2, 1), 0
	}
	rows = min(max(sessions, 1), max(3, room*2/5))
	detail = room - rows
	if detail < 3 {
		return room + 1, 0
	}
	return rows, detail
}

// screen is the main screen: header, list, detail pane, status and keys.
func (m *model) screen() []string {
	vis := m.visible()
	rows, detailRows := m.layout(len(vis))
	bottom := m.bottomLines()
	if extra := len(bottom) - 2; extra > 0 {
		if detailRows > extra {
			detailRows -= extra
		} else {
			rows = max(1, rows-extra)
		}
	}
	cols := layoutColumns(m.columns(), m.width)

	out := []string{m.header(), m.listHeader(cols)}
	switch {
	case len(vis) == 0:
		out = append(out, m.st.faint.Render("  "+m.emptyText()))
		for i := 1; i < rows; i++ {
			out = append(out, "")
		}
	default:
		for i := m.top; i < m.top+rows; i++ {
			if i < len(vis) {
				out = append(out, m.row(cols, vis[i], vis[i].ID == m.selected))
			} else {
				out = append(out, "")
			}
		}
	}
	if detailRows > 0 {
		s := m.sessions[m.selected]
		if s == nil {
			out = append(out, m.st.faint.Render(rule("", m.width)))
			for i := 0; i < detailRows; i++ {
				out = append(out, "")
			}
		} else {
			title := displayName(s) + " · " + s.ID + " · " + stateText(s)
			if s.Agent != nil && s.Agent.State != "" {
				title += " · agent " + s.Agent.State
			}
			out = append(out, m.st.title.Render(rule(title, m.width)))
			d := m.detail(s, m.width, detailRows)
			for i := 0; i < detailRows; i++ {
				if i < len(d) {
					out = append(out, d[i])
				} else {
					out = append(out, "")
				}
			}
		}
	}
	return append(out, bottom...)
}

// bottomLines are the status line and the key line. A question or prompt
// puts the command it runs where the keys were; a status too long for one
// line takes both.
func (m *model) bottomLines() []string {
	st := m.statusLine()
	switch m.mode {
	case modeConfirm:
		q := strings.Split(ansi.Wrap(st, m.width, ""), "\n")
		return append(q[:min(len(q), 3)], "$ "+m.confirm.command+m.st.faint.Render("   y runs it · any other key cancels"))
	case modePrompt:
		return []string{st, "$ " + m.prompt.command(m) + m.st.faint.Render("   ⏎ runs it · esc cancels")}
	}
	if ansi.StringWidth(st) > m.width {
		lines := strings.Split(ansi.Wrap(st, m.width, ""), "\n")
		if len(lines) >= 2 {
			return lines[:2]
		}
	}
	return []string{st, m.keyLine()}
}

// emptyText says why the list is empty.
func (m *model) emptyText() string {
	switch {
	case !m.tried:
		return "connecting to sessiond on " + line(m.opt.Socket) + "…"
	case !m.online && len(m.sessions) == 0:
		return "no sessions known: sessiond is not reachable"
	case m.filter != "":
		return fmt.Sprintf("no %s session matches %q (esc clears the filter)", m.tab, m.filter)
	case m.tab == tabLive:
		return "no live session · start one with sessionctl start DIR -- CMD"
	}
	return fmt.Sprintf("no %s session", m.tab)
}

// header is the top line: the tabs, the order, the filter, the daemon's
// reachability and the time.
func (m *model) header() string {
	live, ended := m.counts()
	tabs := []string{
		fmt.Sprintf("live %d", live), fmt.Sprintf("ended %d", ended), fmt.Sprintf("all %d", live+ended),
	}
	var b strings.Builder
	b.WriteString(m.st.bold.Render("sessiond") + " ")
	for i, t := range tabs {
		if tab(i) == m.tab {
			b.WriteString(m.st.tabOn.Render("[" + t + "]"))
		} else {
			b.WriteString(m.st.tabOff.Render(" " + t + " "))
		}
	}
	arrow := "↑"
	if m.desc {
		arrow = "↓"
	}
	right := []string{"sort " + m.order.String() + arrow}
	switch {
	case m.mode == modeFilter:
		right = append(right, "/"+m.input.view(&m.st))
	case m.filter != "":
		right = append(right, m.st.info.Render("/"+line(m.filter)))
	}
	switch {
	case !m.tried:
		right = append(right, m.st.faint.Render("connecting"))
	case !m.online:
		right = append(right, m.st.bad.Render("offline"))
	}
	if m.opt.HostStates != nil {
		for _, h := range m.opt.HostStates() {
			switch {
			case h.Online:
				right = append(right, m.st.good.Render(line(h.Name)))
			case h.Err != "":
				right = append(right, m.st.bad.Render(line(h.Name)+" offline, retrying"))
			default:
				right = append(right, m.st.faint.Render(line(h.Name)+" connecting"))
			}
		}
	}
	right = append(right, m.clock(m.now))
	r := strings.Join(right, "  ")
	gap := m.width - ansi.StringWidth(b.String()) - ansi.StringWidth(r)
	if gap < 2 {
		return b.String() + "  " + r
	}
	return b.String() + strings.Repeat(" ", gap) + r
}

// keyLine lists the main keys, as many as fit.
func (m *model) keyLine() string {
	var b strings.Builder
	width := 0
	for i, k := range m.keys.short() {
		h := k.Help()
		item := h.Key + " " + h.Desc
		sep := 0
		if i > 0 {
			sep = 2
		}
		if width+sep+ansi.StringWidth(item) > m.width-2 {
			if width+sep+1 <= m.width {
				b.WriteString(strings.Repeat(" ", sep) + m.st.faint.Render("…"))
			}
			break
		}
		if sep > 0 {
			b.WriteString("  ")
		}
		b.WriteString(m.st.key.Render(h.Key) + " " + m.st.faint.Render(h.Desc))
		width += sep + ansi.StringWidth(item)
	}
	return b.String()
}

// statusLine is the line above the keys: the daemon's absence, the
// question or prompt of an action, or the last action and its command.
func (m *model) statusLine() string {
	switch m.mode {
	case modeConfirm:
		return m.confirm.render(m)
	case modePrompt:
		return m.prompt.render(m)
	case modeFilter:
		return m.st.faint.Render("filter: type words to match · ⏎ keeps it · esc clears it")
	}
	if m.tried && !m.online {
		return m.st.banner.Render(" sessiond is not reachable on " + line(m.opt.Socket) + " (" + m.offline + ") · retrying ")
	}
	return m.status.render(m)
}

// describeOffline says in a few words why the daemon is not reachable.
func describeOffline(err error) string {
	var sys *os.SyscallError
	if errors.As(err, &sys) {
		return line(sys.Err.Error())
	}
	var un *ipc.UnreachableError
	if errors.As(err, &un) {
		return line(un.Err.Error())
	}
	return firstLine(err.Error())
}
