package term

import (
	"reflect"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/vt"
)

// A quiet holder's screen lets go of the emulator's cell grid. The grid
// costs over 100 bytes a cell (a Cell is its content, three colours, a
// link and a width), 220 KB at 80x24 and over a megabyte at 200x50, most
// of an idle holder's heap; the same screen as text and style runs is a
// few kilobytes. Everything else of the emulator (the cursor and the one
// it saved, the pen, the scroll region, the modes, the character sets)
// stays where it is, so the screen that comes back is the very one that
// rested: the cells are put back into the same buffer before the emulator
// is next used (wake), whatever uses it.

// restingGrid is a main screen's cells while they rest.
type restingGrid struct {
	// buf is the buffer the cells came from and go back to; width is its
	// lines' length.
	buf   *uv.RenderBuffer
	width int
	lines []restingLine
	// scrollback is the main screen's scrollback, kept empty (the holder
	// moves what scrolls off into its own), let go while it rests.
	scrollback bool
}

// restingLine is a line of cells: their contents one after the other, and
// for each cell its content's length and width; the style and link are
// those of the last mark at or before the cell (none: the zero style, no
// link).
type restingLine struct {
	text  string
	cells []uint16
	marks []restingMark
}

type restingMark struct {
	at    int
	style uv.Style
	link  uv.Link
}

// A cell's entry: its content's length above cellWidthBits, its width
// below.
const (
	cellWidthBits = 2
	maxCellWidth  = 1<<cellWidthBits - 1
	maxCellText   = 1<<(16-cellWidthBits) - 1
)

// rest lets the main screen's cell grid go until the emulator is next
// used. A screen the emulator's layout hides, or with a cell the entries
// cannot hold, stays as it is.
func (s *screen) rest() {
	if s.resting != nil || s.main == nil {
		return
	}
	buf := screenBuffer(s.main)
	if buf == nil || buf.Buffer == nil || len(buf.Lines) == 0 {
		return
	}
	g := &restingGrid{buf: buf, width: len(buf.Lines[0]), lines: make([]restingLine, len(buf.Lines))}
	for y, line := range buf.Lines {
		if len(line) != g.width {
			return
		}
		l, ok := restLine(line)
		if !ok {
			return
		}
		g.lines[y] = l
	}
	buf.Lines = nil
	if sb := s.main.Scrollback(); sb != nil && sb.Len() == 0 {
		g.scrollback = true
		s.main.SetScrollback(nil)
	}
	s.resting = g
}

// wake puts the cells back where they were, before anything uses the
// emulator.
func (s *screen) wake() {
	g := s.resting
	if g == nil {
		return
	}
	s.resting = nil
	lines := make([]uv.Line, len(g.lines))
	for y, l := range g.lines {
		lines[y] = l.line(g.width)
	}
	g.buf.Lines = lines
	if g.scrollback {
		s.main.SetScrollback(vt.NewScrollback(emuScrollback))
	}
}

// restLine encodes a line; false if a cell does not fit an entry.
func restLine(line uv.Line) (restingLine, bool) {
	var l restingLine
	l.cells = make([]uint16, len(line))
	size := 0
	for i := range line {
		size += len(line[i].Content)
	}
	text := make([]byte, 0, size)
	var style uv.Style
	var link uv.Link
	for i := range line {
		c := &line[i]
		if len(c.Content) > maxCellText || c.Width < 0 || c.Width > maxCellWidth {
			return restingLine{}, false
		}
		l.cells[i] = uint16(len(c.Content))<<cellWidthBits | uint16(c.Width)
		text = append(text, c.Content...)
		if !sameStyle(&c.Style, &style) || c.Link != link {
			style, link = c.Style, c.Link
			l.marks = append(l.marks, restingMark{at: i, style: style, link: link})
		}
	}
	l.text = string(text)
	return l, true
}

// line is the line of cells l encodes, width cells long.
func (l *restingLine) line(width int) uv.Line {
	line := make(uv.Line, width)
	off, m := 0, 0
	var style uv.Style
	var link uv.Link
	for i := range line {
		for m < len(l.marks) && l.marks[m].at == i {
			style, link = l.marks[m].style, l.marks[m].link
			m++
		}
		e := l.cells[i]
		n := int(e >> cellWidthBits)
		line[i] = uv.Cell{Content: l.text[off : off+n], Style: style, Link: link, Width: int(e & maxCellWidth)}
		off += n
	}
	return line
}

// sameStyle says whether two styles are identical, colours of the same
// type and value; a colour of a type that cannot be compared is taken as
// different, which costs a mark and loses nothing.
func sameStyle(a, b *uv.Style) bool {
	for _, c := range []any{a.Fg, a.Bg, a.UnderlineColor, b.Fg, b.Bg, b.UnderlineColor} {
		if c != nil && !reflect.TypeOf(c).Comparable() {
			return false
		}
	}
	return *a == *b
}

// screenBuffer is the cell buffer of an emulator's screen, nil if it is
// not where it was. The emulator exports its screens' cells one at a time
// only; a test checks that this still finds the buffer.
func screenBuffer(scr *vt.Screen) *uv.RenderBuffer {
	f := reflect.ValueOf(scr).Elem().FieldByName("buf")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*uv.RenderBuffer]() || f.IsNil() {
		return nil
	}
	return (*uv.RenderBuffer)(f.UnsafePointer())
}
