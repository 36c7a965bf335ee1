package ui

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/sessiond/sessiond/ipc"
)

// tab is the part of the sessions the list shows.
type tab int

const (
	tabLive tab = iota
	tabEnded
	tabAll
	tabCount
)

func (t tab) String() string {
	switch t {
	case tabLive:
		return "live"
	case tabEnded:
		return "ended"
	}
	return "all"
}

func (t tab) holds(s *ipc.Session) bool {
	switch t {
	case tabLive:
		return ipc.Live(s.State)
	case tabEnded:
		return !ipc.Live(s.State)
	}
	return true
}

// order is what the list is sorted by.
type order int

const (
	byStarted order = iota
	byName
	byState
	byDeadline
	byActivity
	orderCount
)

func (o order) String() string {
	return [...]string{"started", "name", "state", "deadline", "activity"}[o]
}

// stateRank puts the states that want attention first.
func stateRank(s *ipc.Session) int {
	switch s.State {
	case ipc.StateWarned:
		return 0
	case ipc.StateStopping:
		return 1
	case ipc.StateStarting:
		return 2
	case ipc.StateRunning:
		if s.Agent != nil && s.Agent.State == ipc.AgentWaiting {
			return 0
		}
		return 3
	case ipc.StateFailed:
		return 4
	}
	return 5
}

// compare orders two sessions by o; ties go by start time, then id, so
// that the order is total and rows do not swap places at random.
func compare(o order, a, b *ipc.Session) int {
	var c int
	switch o {
	case byName:
		c = cmp.Compare(strings.ToLower(displayName(a)), strings.ToLower(displayName(b)))
	case byState:
		c = cmp.Compare(stateRank(a), stateRank(b))
	case byDeadline:
		// Live sessions by their deadline; ended ones after them.
		la, lb := ipc.Live(a.State), ipc.Live(b.State)
		switch {
		case la && !lb:
			c = -1
		case !la && lb:
			c = 1
		default:
			c = a.Deadline.Compare(b.Deadline)
		}
	case byActivity:
		// Most recent first.
		c = activity(b).Compare(activity(a))
	}
	if c == 0 {
		c = a.StartedAt.Compare(b.StartedAt)
	}
	if c == 0 {
		c = cmp.Compare(a.ID, b.ID)
	}
	return c
}

func activity(s *ipc.Session) time.Time {
	if s.LastActivity != nil {
		return *s.LastActivity
	}
	return s.StartedAt
}

// matches reports whether the session matches every word of the filter,
// in its id, name, project, command, state, agent or worktree.
func matches(s *ipc.Session, filter string) bool {
	words := strings.Fields(strings.ToLower(filter))
	if len(words) == 0 {
		return true
	}
	hay := []string{s.ID, s.Name, s.ProjectDir, strings.Join(s.Command, " "), s.State, s.EndReason}
	if s.Agent != nil {
		hay = append(hay, s.Agent.Name, s.Agent.State)
	}
	if s.Worktree != nil {
		hay = append(hay, s.Worktree.Name, s.Worktree.Branch)
	}
	all := strings.ToLower(strings.Join(hay, "\x00"))
	for _, w := range words {
		if !strings.Contains(all, w) {
			return false
		}
	}
	return true
}

// visible returns the sessions of the current tab that match the filter,
// in the list's order.
func (m *model) visible() []*ipc.Session {
	var out []*ipc.Session
	for _, s := range m.sessions {
		if m.tab.holds(s) && matches(s, m.filter) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *ipc.Session) int {
		c := compare(m.order, a, b)
		if m.desc {
			return -c
		}
		return c
	})
	return out
}

// counts returns the number of sessions in each tab.
func (m *model) counts() (live, ended int) {
	for _, s := range m.sessions {
		if ipc.Live(s.State) {
			live++
		} else {
			ended++
		}
	}
	return live, ended
}

// multiUser reports whether sessions of more than one user are listed
// (root sees everyone's): the list then has a USER column.
func (m *model) multiUser() bool {
	uid := -1
	for _, s := range m.sessions {
		if uid >= 0 && s.UID != uid {
			return true
		}
		uid = s.UID
	}
	return false
}

// column is one column of the list.
type column struct {
	title string
	width int // the width, or the least width of a flexible column
	max   int // a flexible column grows up to max (0: without bound)
	flex  bool
	right bool
	// drop ranks the columns left out first when the window is narrow:
	// the highest goes first.
	drop int
	cell func(m *model, s *ipc.Session, w int) (text string, style paint)
}

// timeColumn is the title of the time bar's column, which styles its own cells.
const timeColumn = "TIME"

func (m *model) columns() []column {
	none := paint{}
	cols := []column{
		{title: "NAME", width: 8, max: 28, flex: true, drop: 0, cell: func(m *model, s *ipc.Session, _ int) (string, paint) {
			return displayName(s), m.st.bold
		}},
		{title: "ID", width: 8, drop: 2, cell: func(_ *model, s *ipc.Session, _ int) (string, paint) {
			return s.ID, none
		}},
	}
	if m.opt.HostStates != nil {
		cols = append(cols, column{title: "HOST", width: 8, drop: 1, cell: func(m *model, s *ipc.Session, _ int) (string, paint) {
			return line(s.Host), m.st.info
		}})
	}
	if m.multiUser() {
		cols = append(cols, column{title: "USER", width: 8, drop: 6, cell: func(m *model, s *ipc.Session, _ int) (string, paint) {
			return line(m.users[s.UID]), none
		}})
	}
	cols = append(cols,
		column{title: "STATE", width: 11, drop: 0, cell: func(m *model, s *ipc.Session, _ int) (string, paint) {
			return stateText(s), m.st.state(s)
		}},
		column{title: "AGENT", width: 8, drop: 3, cell: func(m *model, s *ipc.Session, _ int) (string, paint) {
			if s.Agent == nil || s.Agent.State == "" {
				return "-", m.st.faint
			}
			if s.Agent.Retrying != nil && s.Agent.State == ipc.AgentWorking && ipc.Live(s.State) {
				return "retrying", m.st.warn
			}
			return s.Agent.State, m.st.agent(s.Agent.State)
		}},
		column{title: timeColumn, width: 10, drop: 1},
		column{title: "LEFT", width: 5, right: true, drop: 1, cell: func(m *model, s *ipc.Session, _ int) (string, paint) {
			if !ipc.Live(s.State) || s.Deadline.IsZero() {
				return "-", m.st.faint
			}
			left := s.Deadline.Sub(m.now)
			if !s.WarnAt.IsZero() && !m.now.Before(s.WarnAt) {
				return compact(left), m.st.warn
			}
			return compact(left), none
		}},
		column{title: "LAST", width: 5, right: true, drop: 4, cell: func(m *model, s *ipc.Session, _ int) (string, paint) {
			if s.LastActivity == nil {
				return "-", m.st.faint
			}
			return compact(m.now.Sub(*s.LastActivity)), none
		}},
		column{title: "CKPT", width: 4, right: true, drop: 5, cell: func(_ *model, s *ipc.Session, _ int) (string, paint) {
			return fmt.Sprint(s.Checkpoints), none
		}},
		column{title: "RST", width: 3, right: true, drop: 5, cell: func(_ *model, s *ipc.Session, _ int) (string, paint) {
			return fmt.Sprint(s.Restarts), none
		}},
		column{title: "TOKENS", width: 6, right: true, drop: 4, cell: func(m *model, s *ipc.Session, _ int) (string, paint) {
			if s.Tokens == nil {
				return "-", m.st.faint
			}
			return tokens(s.Tokens.Total()), none
		}},
		column{title: "PROJECT", width: 10, flex: true, drop: 7, cell: func(_ *model, s *ipc.Session, w int) (string, paint) {
			wt := ""
			if s.Worktree != nil {
				wt = " [" + line(s.Worktree.Name) + "]"
			}
			// The whole directory when it fits, else its base name.
			if p := line(s.ProjectDir) + wt; ansi.StringWidth(p) <= w {
				return p, none
			}
			return line(filepath.Base(s.ProjectDir)) + wt, none
		}},
	)
	return cols
}

// layoutColumns picks the columns that fit in width (one cell of marker,
// a space between columns) and shares the room left among the flexible
// ones.
func layoutColumns(cols []column, width int) []column {
	need := func(cs []column) int {
		n := 1
		for _, c := range cs {
			n += 1 + c.width
		}
		return n
	}
	cols = slices.Clone(cols)
	for len(cols) > 1 && need(cols) > width {
		worst := 0
		for i, c := range cols {
			if c.drop >= cols[worst].drop {
				worst = i
			}
		}
		cols = slices.Delete(cols, worst, worst+1)
	}
	room := width - need(cols)
	for room > 0 {
		grew := false
		for i := range cols {
			c := &cols[i]
			if room > 0 && c.flex && (c.max == 0 || c.width < c.max) {
				c.width++
				room--
				grew = true
			}
		}
		if !grew {
			break
		}
	}
	return cols
}

// listHeader is the line of column titles.
func (m *model) listHeader(cols []column) string {
	var b strings.Builder
	b.WriteString(" ")
	for _, c := range cols {
		b.WriteString(" ")
		if c.right {
			b.WriteString(fmt.Sprintf("%*s", c.width, c.title))
		} else {
			b.WriteString(fit(c.title, c.width))
		}
	}
	return m.st.faint.Render(b.String())
}

// row renders one session's line of the list; the selected one is drawn
// in reverse video without colours, and marked for terminals (and
// screen captures) that show no attributes.
func (m *model) row(cols []column, s *ipc.Session, selected bool) string {
	var b strings.Builder
	if selected {
		b.WriteString("▸")
	} else {
		b.WriteString(" ")
	}
	for _, c := range cols {
		b.WriteString(" ")
		if c.title == timeColumn {
			if selected {
				b.WriteString(fit(plainBar(s, c.width, m.now), c.width))
			} else {
				b.WriteString(m.st.bar(s, c.width, m.now))
			}
			continue
		}
		text, style := c.cell(m, s, c.width)
		if c.right {
			if w := ansi.StringWidth(text); w < c.width {
				text = strings.Repeat(" ", c.width-w) + text
			}
		}
		if c.title == "PROJECT" {
			text = fitLeft(text, c.width)
		} else {
			text = fit(text, c.width)
		}
		if selected {
			b.WriteString(text)
		} else {
			b.WriteString(style.Render(text))
		}
	}
	if selected {
		return m.st.selected.Render(fit(b.String(), m.width))
	}
	return b.String()
}

// plainBar is the time bar without styles.
func plainBar(s *ipc.Session, w int, now time.Time) string {
	cells := barCells(s, w, now)
	if cells == nil {
		return barEmpty
	}
	r := make([]rune, len(cells))
	for i, c := range cells {
		r[i] = c.r
	}
	return string(r)
}
