package ui

import (
	"math"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/sessiond/sessiond/ipc"
)

// paint is an SGR style: Render wraps text in the style's sequence and a
// reset. The dashboard styles with x/ansi, which Bubble Tea links anyway,
// rather than lipgloss: lipgloss detects the terminal's colours in its
// package initialisation (reading terminfo, and running `tmux info` inside
// tmux), which every sessionctl command would pay at start-up.
type paint struct{ sgr ansi.Style }

// Render styles s.
func (p paint) Render(s string) string {
	if len(p.sgr) == 0 || s == "" {
		return s
	}
	return p.sgr.Styled(s)
}

// styles are the dashboard's looks. They are built when the dashboard
// starts, not at package initialisation, and without colour when the user
// asked for none (NO_COLOR, --no-color): bold, faint and reverse remain,
// and every state is also written out as a word.
type styles struct {
	color bool

	plain, title, bold, faint, reverse paint
	tabOn, tabOff                      paint
	selected                           paint
	good, warn, bad, info, note        paint
	banner                             paint
	key                                paint
}

func newStyles(color bool) styles {
	sgr := func(s ansi.Style) paint { return paint{s} }
	fg := func(c ansi.BasicColor, more ansi.Style) paint {
		if !color {
			return paint{more}
		}
		return paint{append(ansi.Style{}.ForegroundColor(c), more...)}
	}
	st := styles{
		color:    color,
		title:    sgr(ansi.Style{}.Bold()),
		bold:     sgr(ansi.Style{}.Bold()),
		faint:    sgr(ansi.Style{}.Faint()),
		reverse:  sgr(ansi.Style{}.Reverse(true)),
		tabOn:    sgr(ansi.Style{}.Bold().Reverse(true)),
		tabOff:   sgr(ansi.Style{}.Faint()),
		selected: sgr(ansi.Style{}.Reverse(true)),
		good:     fg(ansi.Green, nil),
		warn:     fg(ansi.Yellow, nil),
		bad:      fg(ansi.Red, nil),
		info:     fg(ansi.Cyan, nil),
		note:     fg(ansi.Magenta, ansi.Style{}.Bold()),
		banner:   fg(ansi.Red, ansi.Style{}.Bold().Reverse(true)),
		key:      fg(ansi.Cyan, ansi.Style{}.Bold()),
	}
	if !color {
		// Without colour the states that need a person stand out by weight.
		st.bad = sgr(ansi.Style{}.Bold())
	}
	return st
}

// state is the style of a session state (or end reason) in the list.
func (st *styles) state(s *ipc.Session) paint {
	switch s.State {
	case ipc.StateRunning:
		return st.good
	case ipc.StateStarting, ipc.StateWarned, ipc.StateStopping, ipc.StateQueued:
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
	return st.plain
}

// agent is the style of an agent state: waiting stands out, since a
// person is wanted.
func (st *styles) agent(state string) paint {
	switch state {
	case ipc.AgentWorking:
		return st.good
	case ipc.AgentWaiting:
		return st.note
	case ipc.AgentLimited, ipc.AgentStalled:
		return st.warn
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

func (st *styles) barStyle(b barStyle, live bool) paint {
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
