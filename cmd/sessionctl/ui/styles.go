package ui

import (
	"math"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/sessiond/sessiond/ipc"
)

// styles are the dashboard's looks. They are built when the dashboard
// starts, not at package initialisation, and without colour when the user
// asked for none (NO_COLOR, --no-color): bold, faint and reverse remain,
// and every state is also written out as a word.
type styles struct {
	color bool

	title, bold, faint, reverse lipgloss.Style
	tabOn, tabOff               lipgloss.Style
	selected                    lipgloss.Style
	good, warn, bad, info, note lipgloss.Style
	banner                      lipgloss.Style
	key                         lipgloss.Style
}

func newStyles(color bool) styles {
	plain := lipgloss.NewStyle()
	fg := func(c string) lipgloss.Style {
		if !color {
			return plain
		}
		return plain.Foreground(lipgloss.Color(c))
	}
	st := styles{
		color:    color,
		title:    plain.Bold(true),
		bold:     plain.Bold(true),
		faint:    plain.Faint(true),
		reverse:  plain.Reverse(true),
		tabOn:    plain.Bold(true).Reverse(true),
		tabOff:   plain.Faint(true),
		selected: plain.Reverse(true),
		good:     fg("2"),
		warn:     fg("3"),
		bad:      fg("1"),
		info:     fg("6"),
		note:     fg("5").Bold(true),
		banner:   fg("1").Bold(true).Reverse(true),
		key:      fg("6").Bold(true),
	}
	if !color {
		// Without colour the states that need a person stand out by weight.
		st.bad = plain.Bold(true)
		st.note = plain.Bold(true)
	}
	return st
}

// state is the style of a session state (or end reason) in the list.
func (st *styles) state(s *ipc.Session) lipgloss.Style {
	switch s.State {
	case ipc.StateRunning:
		return st.good
	case ipc.StateStarting, ipc.StateWarned, ipc.StateStopping:
		return st.warn
	case ipc.StateFailed:
		return st.bad
	case ipc.StateEnded:
		switch s.EndReason {
		case ipc.EndComplete, ipc.EndInterrupted:
			return st.faint
		}
		return st.bad
	}
	return lipgloss.NewStyle()
}

// agent is the style of an agent state: waiting stands out, since a
// person is wanted.
func (st *styles) agent(state string) lipgloss.Style {
	switch state {
	case ipc.AgentWorking:
		return st.good
	case ipc.AgentWaiting:
		return st.note
	}
	return st.faint
}

// Cells of the time bar.
const (
	barUsed  = '█'
	barLeft  = '░'
	barMark  = '│'
	barEmpty = "-"
)

// bar draws the time a session has used of its run up to the deadline, w
// cells wide, with the warning time marked: green before the warning,
// yellow after it, red past the deadline. An ended session's bar stops
// where it ended.
func (st *styles) bar(s *ipc.Session, w int, now time.Time) string {
	cells := barCells(s, w, now)
	if cells == nil {
		return fit(barEmpty, w)
	}
	var b strings.Builder
	runStart := 0
	for i := 1; i <= len(cells); i++ {
		if i < len(cells) && cells[i].style == cells[runStart].style {
			continue
		}
		var text strings.Builder
		for _, c := range cells[runStart:i] {
			text.WriteRune(c.r)
		}
		b.WriteString(st.barStyle(cells[runStart].style, ipc.Live(s.State)).Render(text.String()))
		runStart = i
	}
	return b.String()
}

type barStyle int

const (
	barStyleLeft barStyle = iota
	barStyleBefore
	barStyleAfter
	barStyleOver
	barStyleMark
)

type barCell struct {
	r     rune
	style barStyle
}

func (st *styles) barStyle(b barStyle, live bool) lipgloss.Style {
	if !live && b != barStyleLeft {
		return st.faint
	}
	switch b {
	case barStyleBefore:
		return st.good
	case barStyleAfter, barStyleMark:
		return st.warn
	case barStyleOver:
		return st.bad
	}
	return st.faint
}

// barCells lays out the bar; nil when the session has no deadline to
// measure against.
func barCells(s *ipc.Session, w int, now time.Time) []barCell {
	if w < 3 || s.StartedAt.IsZero() || !s.Deadline.After(s.StartedAt) {
		return nil
	}
	end := now
	if s.EndedAt != nil {
		end = *s.EndedAt
	}
	total := float64(s.Deadline.Sub(s.StartedAt))
	frac := math.Min(math.Max(float64(end.Sub(s.StartedAt))/total, 0), 1)
	used := int(math.Round(frac * float64(w)))
	mark := -1
	if s.WarnAt.After(s.StartedAt) && s.WarnAt.Before(s.Deadline) {
		mark = min(int(float64(s.WarnAt.Sub(s.StartedAt))/total*float64(w)), w-1)
	}
	over := !end.Before(s.Deadline)
	cells := make([]barCell, w)
	for i := range cells {
		switch {
		case i == mark:
			cells[i] = barCell{barMark, barStyleMark}
		case i >= used:
			cells[i] = barCell{barLeft, barStyleLeft}
		case over:
			cells[i] = barCell{barUsed, barStyleOver}
		case mark >= 0 && i > mark:
			cells[i] = barCell{barUsed, barStyleAfter}
		default:
			cells[i] = barCell{barUsed, barStyleBefore}
		}
	}
	return cells
}
