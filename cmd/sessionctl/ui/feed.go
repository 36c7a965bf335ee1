package ui

import (
	"errors"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sessiond/sessiond/ipc"
)

// retryDelay is how long the dashboard waits before it tries to reach the
// daemon again: quickly at first, then every two seconds.
func retryDelay(retries int) time.Duration {
	d := 250 * time.Millisecond << min(retries, 3)
	return min(d, 2*time.Second)
}

// feed applies what the daemon sent.
func (m model) feed(msg tea.Msg) (model, tea.Cmd) {
	switch msg := msg.(type) {
	case connectedMsg:
		if m.events != nil {
			m.events.Close()
		}
		m.events = msg.w
		lost := m.tried
		m.online, m.tried, m.offline, m.retries = true, true, "", 0
		m.sessions = make(map[string]*ipc.Session, len(msg.sessions))
		m.fetching = map[string]bool{}
		for i := range msg.sessions {
			m.put(&msg.sessions[i])
		}
		// A stream of a connection lost is of a daemon gone: the output
		// is followed anew, and what failed meanwhile is asked again.
		if lost {
			m.tail.f.stop()
			m.tail = tailView{}
		}
		for id, r := range m.handoffs {
			if r.err != nil {
				delete(m.handoffs, id)
			}
		}
		for dir, r := range m.checkpoints {
			if r.err != nil {
				delete(m.checkpoints, dir)
			}
		}
		return m, nextEvent(msg.w)
	case offlineMsg:
		m.online, m.tried = false, true
		m.offline = describeOffline(msg.err)
		delay := retryDelay(m.retries)
		m.retries++
		return m, tea.Tick(delay, func(time.Time) tea.Msg { return reconnectMsg{} })
	case reconnectMsg:
		if m.conn == nil {
			return m, nil
		}
		return m, m.conn.connect()
	case streamEndedMsg:
		if msg.w != m.events {
			return m, nil
		}
		m.events.Close()
		m.events = nil
		if m.conn == nil {
			m.online = false
			return m, nil
		}
		// Connect again at once: a stream the daemon cut comes back; a
		// daemon that went away shows when the connection fails.
		return m, m.conn.connect()
	case eventMsg:
		if msg.w != m.events {
			return m, nil
		}
		if msg.ev.Type == ipc.EventMissed && m.conn != nil {
			// What the missed events said is read again: the list.
			return m, tea.Batch(nextEvent(msg.w), m.conn.list(msg.w))
		}
		return m, tea.Batch(nextEvent(msg.w), m.onEvent(msg.ev))
	case listedMsg:
		if msg.w != m.events || msg.err != nil {
			// The stream's next events fetch their sessions as ever.
			return m, nil
		}
		listed := make(map[string]bool, len(msg.sessions))
		for i := range msg.sessions {
			listed[msg.sessions[i].ID] = true
			m.put(&msg.sessions[i])
		}
		for id := range m.sessions {
			if _, inFlight := m.fetching[id]; !listed[id] && !inFlight {
				delete(m.sessions, id)
			}
		}
	case recordMsg:
		again := m.fetching[msg.id]
		delete(m.fetching, msg.id)
		switch {
		case msg.err == nil && msg.s != nil:
			m.put(msg.s)
		case errors.Is(msg.err, ipc.ErrNotFound):
			delete(m.sessions, msg.id)
		}
		if again {
			return m, m.fetch(msg.id)
		}
	}
	return m, nil
}

// onEvent fetches the record of the event's session again and drops what
// the event makes stale.
func (m *model) onEvent(ev ipc.Event) tea.Cmd {
	if ev.SessionID == "" {
		return nil
	}
	switch ev.Type {
	case ipc.EventEnded, ipc.EventFailed:
		delete(m.handoffs, ev.SessionID)
	case ipc.EventCheckpoint:
		if s := m.sessions[ev.SessionID]; s != nil {
			delete(m.checkpoints, s.ProjectDir)
		}
	}
	return m.fetch(ev.SessionID)
}

// fetch asks for a session's record, one request at a time per session:
// events that come while one is in flight make it ask once more after.
func (m *model) fetch(id string) tea.Cmd {
	if m.conn == nil {
		return nil
	}
	if _, inFlight := m.fetching[id]; inFlight {
		m.fetching[id] = true
		return nil
	}
	m.fetching[id] = false
	return m.conn.fetch(id)
}

// put stores a record unless a newer one is known. A restart's successor
// takes its predecessor's row, as in sessionctl ps.
func (m *model) put(s *ipc.Session) {
	if old := m.sessions[s.ID]; old != nil && s.Seq < old.Seq {
		return
	}
	s.Spec = nil
	m.sessions[s.ID] = s
	m.learnUser(s.UID)
	if s.RestartOf != "" {
		if _, ok := m.sessions[s.RestartOf]; ok {
			delete(m.sessions, s.RestartOf)
			if m.selected == s.RestartOf {
				m.selected = s.ID
			}
		}
	}
	if m.pendingSelect == s.ID {
		m.pendingSelect = ""
		m.selected = s.ID
		if !m.tab.holds(s) {
			m.tab = tabAll
		}
	}
}

// settle keeps the selection on a listed session and the list scrolled
// to it, and starts what the detail pane of the selection needs: its
// output, its handoff, its project's checkpoints.
func (m *model) settle() tea.Cmd {
	vis := m.visible()
	idx := -1
	for i, s := range vis {
		if s.ID == m.selected {
			idx = i
			break
		}
	}
	if idx < 0 {
		if len(vis) == 0 {
			m.selected, m.cursor, m.top = "", 0, 0
		} else {
			idx = min(max(m.cursor, 0), len(vis)-1)
			m.selected = vis[idx].ID
		}
	}
	if idx >= 0 {
		m.cursor = idx
		rows, _ := m.layout(len(vis))
		if idx < m.top {
			m.top = idx
		}
		if idx >= m.top+rows {
			m.top = idx - rows + 1
		}
		m.top = max(0, min(m.top, len(vis)-rows))
	}

	var cmds []tea.Cmd
	if m.tail.id != m.selected {
		m.tail.f.stop()
		m.tail = tailView{id: m.selected}
		if m.selected != "" && m.conn != nil && m.online {
			f, cmd := m.conn.follow(m.selected, tailLines)
			m.tail.f = f
			cmds = append(cmds, cmd)
		}
	}
	s := m.sessions[m.selected]
	if s == nil || m.conn == nil || !m.online {
		return tea.Batch(cmds...)
	}
	if !ipc.Live(s.State) {
		if _, ok := m.handoffs[s.ID]; !ok {
			m.handoffs[s.ID] = handoffResult{loading: true}
			cmds = append(cmds, m.conn.handoff(s.ID))
		}
	}
	if s.ProjectDir != "" {
		if _, ok := m.checkpoints[s.ProjectDir]; !ok {
			m.checkpoints[s.ProjectDir] = checkpointsResult{loading: true}
			cmds = append(cmds, m.conn.checkpoints(s.ProjectDir))
		}
	}
	return tea.Batch(cmds...)
}

// logs applies a batch of output lines to the pane or the pager that
// follows them.
func (m model) logs(msg logMsg) (model, tea.Cmd) {
	switch {
	case msg.f == m.tail.f && m.tail.id != "":
		m.tail.lines = appendCapped(m.tail.lines, msg.lines, tailLines)
		m.outputSeen(msg)
		if msg.ended {
			m.tail.ended = true
			if msg.err != nil {
				m.tail.err = msg.err.Error()
			}
			return m, nil
		}
	case m.mode == modePager && msg.f == m.pager.f:
		m.pager.add(msg.lines)
		if msg.ended {
			m.pager.ended = true
			if msg.err != nil {
				m.pager.err = msg.err.Error()
			}
			return m, nil
		}
	default:
		return m, nil
	}
	if msg.f == nil {
		return m, nil
	}
	return m, msg.f.wait()
}

// appendCapped appends and keeps only the last max lines.
func appendCapped(lines, more []string, max int) []string {
	lines = append(lines, more...)
	if over := len(lines) - max; over > 0 {
		lines = append(lines[:0:0], lines[over:]...)
	}
	return lines
}

// backlogTime is how long after a follower starts its lines are taken to
// be the log's tail rather than new output.
const backlogTime = time.Second

// outputSeen moves the selected session's last activity to the time new
// output came: the daemon sends no event for output (only for file
// changes), and the pane follows the output anyway.
func (m *model) outputSeen(msg logMsg) {
	s := m.sessions[m.tail.id]
	if msg.f == nil || len(msg.lines) == 0 || s == nil || !ipc.Live(s.State) || msg.at.Sub(msg.f.started) < backlogTime {
		return
	}
	if s.LastActivity == nil || s.LastActivity.Before(msg.at) {
		c := *s
		at := msg.at
		c.LastActivity = &at
		m.sessions[s.ID] = &c
	}
}
