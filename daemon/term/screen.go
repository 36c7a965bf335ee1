package term

import (
	"bytes"
	"fmt"
	"image"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"

	"github.com/sessiond/sessiond/ipc"
)

// screen is the holder's picture of the terminal: an emulator fed with
// everything the child writes, and the lines that scrolled off its top kept
// as text. It is owned by the holder's loop; nothing else touches it.
type screen struct {
	emu *vt.Emulator
	// alt is the emulator's alternate screen, kept at 1x1 while the main
	// screen is in use (nil if the emulator's layout is not as expected);
	// cols and rows are the terminal's size.
	alt        *vt.Screen
	cols, rows int
	// main is the emulator's main screen (nil as alt), whose cells rest
	// in resting while the holder is quiet (rest.go).
	main      *vt.Screen
	resting   *restingGrid
	callbacks vt.Callbacks
	// pending is output the emulator has not seen yet, and skipped counts
	// what was dropped from its front (see queue).
	pending []byte
	skipped int
	title   string
	// modes are the DEC private modes set now that a new viewer's terminal
	// must be told about (cursor keys, mouse, bracketed paste, focus).
	modes      map[int]bool
	keypad     bool
	scrollback lineRing
}

// feedPiece bounds what the emulator is given at once, so that the lines
// one piece can push into the emulator's own scrollback stay below
// emuScrollback and are all moved into the text scrollback.
const (
	feedPiece     = 1024
	emuScrollback = 2048
)

// replayedModes are the modes a repaint sets on a new viewer's terminal.
var replayedModes = []int{1, 1000, 1002, 1003, 1004, 1006, 2004}

func newScreen(size ipc.TermSize, scrollback int) *screen {
	s := &screen{emu: vt.NewEmulator(size.Cols, size.Rows), cols: size.Cols, rows: size.Rows, modes: map[int]bool{}}
	s.scrollback.max = scrollback
	s.emu.SetScrollbackSize(emuScrollback)
	s.callbacks = vt.Callbacks{
		Title:       func(t string) { s.title = t },
		EnableMode:  func(m ansi.Mode) { s.setMode(m, true) },
		DisableMode: func(m ansi.Mode) { s.setMode(m, false) },
		AltScreen:   s.altScreen,
	}
	s.emu.SetCallbacks(s.callbacks)
	s.main, s.alt = trimEmulator(s.emu)
	s.parkAlt()
	return s
}

// parkAlt shrinks the alternate screen to a single cell while the main
// screen is in use: most agents never leave the main screen, and a cell
// grid costs over 100 bytes a cell (a megabyte at 200x50). A fresh screen
// replaces it because shrinking one keeps its cells.
func (s *screen) parkAlt() {
	if s.alt == nil || s.emu.IsAltScreen() {
		return
	}
	*s.alt = *vt.NewScreen(1, 1)
	s.alt.SetScrollback(nil)
	s.emu.SetCallbacks(s.callbacks) // the fresh screen needs them too
}

// altScreen follows the child onto the alternate screen and back; on the
// way in, the parked screen gets the terminal's size before anything is
// drawn on it.
func (s *screen) altScreen(on bool) {
	if s.alt == nil {
		return
	}
	if on {
		s.alt.Resize(s.cols, s.rows)
		return
	}
	s.parkAlt()
}

func (s *screen) setMode(m ansi.Mode, on bool) {
	switch m := m.(type) {
	case ansi.DECMode:
		if m == ansi.ModeNumericKeypad {
			s.keypad = on
			return
		}
		for _, r := range replayedModes {
			if int(m) == r {
				s.modes[r] = on
			}
		}
	}
}

// scrollRegion reads a screen's scroll region, rows top (0-based) to
// bottom (exclusive); ok is false where the emulator's layout is not as
// expected (a test checks that it is).
func scrollRegion(scr *vt.Screen) (top, bottom int, ok bool) {
	if scr == nil {
		return 0, 0, false
	}
	f := reflect.ValueOf(scr).Elem().FieldByName("scroll")
	if !f.IsValid() || f.Type() != reflect.TypeFor[image.Rectangle]() {
		return 0, 0, false
	}
	r := *(*image.Rectangle)(unsafe.Pointer(f.UnsafeAddr()))
	return r.Min.Y, r.Max.Y, true
}

// parserData bounds the emulator's buffer for the payload of OSC, DCS and
// APC strings (titles, hyperlinks, clipboard and image data). The emulator
// sets 4 MiB, which a holder would keep for the whole session once a long
// string has touched it; longer strings are cut, and a holder has no use
// for images anyway.
const parserData = 64 << 10

// trimEmulator makes the emulator fit a small holder: it turns off the
// alternate screen's scrollback, shrinks the parser's string buffer, and
// returns the main and alternate screens (nil if they are not where they
// were).
// The emulator gives each of its two screens a scrollback of 10,000 lines
// but exposes only the main one's; lines a full-screen program scrolls on
// the alternate screen would pile up there out of reach, at over 100 bytes
// a cell. Neither the screens nor the parser are exported, hence reflect;
// a test checks that this still finds them.
func trimEmulator(e *vt.Emulator) (main, alt *vt.Screen) {
	ev := reflect.ValueOf(e).Elem()
	scrs := ev.FieldByName("scrs")
	if !scrs.IsValid() || scrs.Kind() != reflect.Array || scrs.Len() != 2 || scrs.Type().Elem() != reflect.TypeFor[vt.Screen]() {
		return nil, nil
	}
	main = (*vt.Screen)(unsafe.Pointer(scrs.Index(0).UnsafeAddr()))
	alt = (*vt.Screen)(unsafe.Pointer(scrs.Index(1).UnsafeAddr()))
	alt.SetScrollback(nil)
	if p := ev.FieldByName("parser"); p.IsValid() && p.Type() == reflect.TypeFor[*ansi.Parser]() && !p.IsNil() {
		(*ansi.Parser)(p.UnsafePointer()).SetDataSize(parserData)
	}
	return main, alt
}

// maxPending bounds the output that waits for the emulator.
const maxPending = 64 << 10

// queue sets output aside for the emulator. The emulator costs a copy of
// the whole screen for every line it scrolls (some 30 µs at 80x24), so fed
// every byte it would hold the child to a megabyte or two a second. Output
// therefore waits here and is fed in batches (flush); when more arrives
// than the emulator can take, the oldest is dropped, so that the screen
// shows the end of a burst, the log keeps all of it, and the child runs at
// the speed of the log.
func (s *screen) queue(p []byte) {
	s.pending = append(s.pending, p...)
	if len(s.pending) > 2*maxPending {
		drop := len(s.pending) - maxPending
		s.skipped += drop
		s.pending = s.pending[:copy(s.pending, s.pending[drop:])]
	}
}

// flush feeds the pending output to the emulator. After a drop it starts
// at a line boundary, and the scrollback says that lines are missing.
func (s *screen) flush() {
	s.wake()
	p := s.pending
	if s.skipped > 0 {
		// Output is being dropped already: only the end matters for the
		// screen, and the emulator's time is better left to the child.
		if keep := max(16<<10, 4*s.emu.Width()*s.emu.Height()); len(p) > keep {
			s.skipped += len(p) - keep
			p = p[len(p)-keep:]
		}
		// At a line boundary, unless the first line's end is in the last
		// half: then what is kept is mostly one long line, whose tail
		// fills the screen as it would have.
		if i := bytes.IndexByte(p, '\n'); i >= 0 && i < len(p)/2 {
			s.skipped += i + 1
			p = p[i+1:]
		}
		// The note goes through the emulator, so that it is on the screen
		// and in the scrollback where the missing lines would be.
		note := fmt.Sprintf("[%d bytes of output skipped here; the session log has them]\r\n", s.skipped)
		if s.emu.CursorPosition().X != 0 {
			note = "\r\n" + note
		}
		s.write([]byte("\x1b[0m" + note))
		s.skipped = 0
	}
	s.write(p)
	s.pending = s.pending[:0]
	if cap(s.pending) > 2*maxPending+64<<10 {
		s.pending = nil
	}
}

func (s *screen) hasPending() bool { return len(s.pending) > 0 || s.skipped > 0 }

// dropping says whether output has overflowed the queue since the last
// flush: the emulator will see only its end.
func (s *screen) dropping() bool { return s.skipped > 0 }

// write feeds terminal output to the emulator and moves what scrolled off
// the top into the text scrollback.
func (s *screen) write(p []byte) {
	s.wake()
	for len(p) > 0 {
		n := min(len(p), feedPiece)
		_, _ = s.emu.Write(p[:n])
		p = p[n:]
		s.drainScrollback()
	}
}

func (s *screen) drainScrollback() {
	sb := s.emu.Scrollback()
	if sb == nil || sb.Len() == 0 {
		return
	}
	lines := sb.Lines()
	for i, l := range lines {
		s.scrollback.push(l.String())
		lines[i] = nil // let the cells go now, not when the slot is reused
	}
	sb.Clear()
}

// replies is where the emulator writes its answers to the child's queries
// (cursor position, device attributes).
func (s *screen) replies() io.Reader { return s.emu }

func (s *screen) resize(size ipc.TermSize) {
	s.wake()
	if size.Cols != s.cols || size.Rows != s.rows {
		s.cols, s.rows = size.Cols, size.Rows
		s.emu.Resize(size.Cols, size.Rows) // both screens
		s.parkAlt()
		s.drainScrollback()
	}
}

func (s *screen) size() ipc.TermSize {
	return ipc.TermSize{Cols: s.cols, Rows: s.rows}
}

// lineText is row y as text: wide characters once, trailing spaces removed.
func (s *screen) lineText(y int) string {
	s.wake()
	var b strings.Builder
	for x := 0; x < s.emu.Width(); x++ {
		c := s.emu.CellAt(x, y)
		if c == nil || c.IsZero() {
			continue // the second column of a wide character
		}
		if c.Content == "" {
			b.WriteByte(' ')
		} else {
			b.WriteString(c.Content)
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// snapshot is the screen as text, with up to scrollback lines of history,
// cut so that the whole answer fits in one frame.
func (s *screen) snapshot(scrollback int) ipc.TermScreen {
	s.wake()
	pos := s.emu.CursorPosition()
	out := ipc.TermScreen{
		Size:      s.size(),
		Cursor:    ipc.TermCursor{X: pos.X, Y: pos.Y, Visible: !s.emu.CursorHidden()},
		AltScreen: s.emu.IsAltScreen(),
		Title:     s.title,
		Lines:     make([]string, s.emu.Height()),
	}
	budget := ipc.MaxTermPayload - 4096
	for y := range out.Lines {
		out.Lines[y] = s.lineText(y)
		budget -= len(out.Lines[y])*2 + 4 // JSON escaping may double a line
	}
	if scrollback > 0 {
		out.Scrollback = s.scrollback.last(scrollback, max(budget, 0))
	}
	return out
}

// repaint is what a new viewer's terminal is sent first: the screen as the
// child drew it, its modes, the cursor, so that the live output that follows
// lands where the child expects.
func (s *screen) repaint() []byte {
	s.wake()
	var b strings.Builder
	// Every mode is stated, on or off: a viewer that lagged behind may have
	// missed the change either way.
	b.WriteString("\x1b[0m")
	if s.emu.IsAltScreen() {
		b.WriteString("\x1b[?1049h")
	} else {
		b.WriteString("\x1b[?1049l")
	}
	b.WriteString("\x1b[H\x1b[2J")
	for y, line := range strings.Split(s.emu.Render(), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		b.WriteString("\x1b[" + strconv.Itoa(y+1) + ";1H")
		b.WriteString(line)
	}
	b.WriteString("\x1b[0m")
	// The scroll region (all of the screen, or the rows a program keeps
	// scrolling while it holds the others still), before the cursor: it
	// moves the cursor home.
	scr := s.main
	if s.emu.IsAltScreen() {
		scr = s.alt
	}
	if top, bottom, ok := scrollRegion(scr); ok && (top > 0 || bottom < s.rows) {
		b.WriteString("\x1b[" + strconv.Itoa(top+1) + ";" + strconv.Itoa(bottom) + "r")
	} else {
		b.WriteString("\x1b[r")
	}
	if s.title != "" {
		b.WriteString("\x1b]2;" + ansiSafe(s.title) + "\x07")
	}
	for _, m := range replayedModes {
		b.WriteString("\x1b[?" + strconv.Itoa(m))
		if s.modes[m] {
			b.WriteByte('h')
		} else {
			b.WriteByte('l')
		}
	}
	if s.keypad {
		b.WriteString("\x1b=")
	} else {
		b.WriteString("\x1b>")
	}
	pos := s.emu.CursorPosition()
	b.WriteString(ansi.CursorPosition(pos.X+1, pos.Y+1))
	if s.emu.CursorHidden() {
		b.WriteString("\x1b[?25l")
	} else {
		b.WriteString("\x1b[?25h")
	}
	return []byte(b.String())
}

// ansiSafe drops control characters (and bytes that are not UTF-8) from a
// string replayed inside an escape sequence, so that a title cannot end the
// sequence early.
func ansiSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError {
			return -1
		}
		return r
	}, s)
}

// lineRing keeps the last max lines of scrollback text.
type lineRing struct {
	lines []string
	start int // index of the oldest line once the ring is full
	max   int
}

func (r *lineRing) push(line string) {
	if r.max <= 0 {
		return
	}
	if len(r.lines) < r.max {
		r.lines = append(r.lines, line)
		return
	}
	r.lines[r.start] = line
	r.start = (r.start + 1) % r.max
}

func (r *lineRing) len() int { return len(r.lines) }

// last returns up to n of the newest lines, oldest first, whose total
// length stays within budget bytes.
func (r *lineRing) last(n, budget int) []string {
	n = min(n, len(r.lines))
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		// Walk from the newest back, then reverse.
		idx := (r.start + len(r.lines) - 1 - i) % len(r.lines)
		budget -= len(r.lines[idx])*2 + 4
		if budget < 0 {
			break
		}
		out = append(out, r.lines[idx])
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}
