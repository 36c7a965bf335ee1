package term

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/charmbracelet/x/vt"

	"github.com/sessiond/sessiond/ipc"
)

// The emulator's screens and parser are found: the alternate screen keeps
// no scrollback of its own (it would grow out of reach), and the parser's
// string buffer is small.
func TestTrimEmulator(t *testing.T) {
	s := newScreen(ipc.TermSize{Cols: 20, Rows: 5}, 100)
	if main, alt := trimEmulator(vt.NewEmulator(10, 10)); main == nil || alt == nil || screenBuffer(main) == nil {
		t.Fatal("trimEmulator no longer finds the emulator's screens and parser")
	}
	p := reflect.ValueOf(s.emu).Elem().FieldByName("parser").Elem().FieldByName("data")
	if p.Len() != parserData {
		t.Fatalf("parser data buffer of %d bytes, want %d", p.Len(), parserData)
	}
	// A long OSC string is cut, not a crash.
	long := newScreen(ipc.TermSize{Cols: 20, Rows: 5}, 100)
	long.write([]byte("\x1b]2;" + strings.Repeat("t", 100<<10) + "\x07after"))
	if long.lineText(0) != "after" {
		t.Fatalf("the screen after a long OSC string: %q", long.lineText(0))
	}
	v := reflect.ValueOf(s.emu).Elem().FieldByName("scrs")
	if !v.IsValid() {
		t.Fatal("the emulator has no screens field any more: dropAltScrollback needs updating")
	}
	alt := (*vt.Screen)(unsafe.Pointer(v.Index(1).UnsafeAddr()))
	if alt.Scrollback() != nil {
		t.Fatal("the alternate screen still has a scrollback")
	}
	main := (*vt.Screen)(unsafe.Pointer(v.Index(0).UnsafeAddr()))
	if main.Scrollback() == nil {
		t.Fatal("the main screen lost its scrollback")
	}
	// Scrolling on the alternate screen keeps nothing; on the main screen
	// every line that scrolls off lands in the text scrollback.
	s.write([]byte("\x1b[?1049h"))
	for i := 0; i < 50; i++ {
		s.write([]byte(fmt.Sprintf("alt %d\r\n", i)))
	}
	s.write([]byte("\x1b[?1049l"))
	if n := s.scrollback.len(); n != 0 {
		t.Fatalf("%d lines kept from the alternate screen", n)
	}
	for i := 0; i < 50; i++ {
		s.write([]byte(fmt.Sprintf("main %d\r\n", i)))
	}
	got := s.scrollback.last(1000, 1<<20)
	if len(got) != 46 || got[0] != "main 0" || got[45] != "main 45" {
		t.Fatalf("scrollback %d lines: %q ... ", len(got), got[:min(3, len(got))])
	}
	if n := s.emu.ScrollbackLen(); n != 0 {
		t.Fatalf("the emulator still holds %d scrollback lines", n)
	}
}

// A burst larger than one piece loses no line of scrollback.
func TestScrollbackBurst(t *testing.T) {
	s := newScreen(ipc.TermSize{Cols: 30, Rows: 4}, 10000)
	var b strings.Builder
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, "%d\r\n", i)
	}
	s.write([]byte(b.String()))
	got := s.scrollback.last(10000, 1<<30)
	if len(got) != 4997 {
		t.Fatalf("%d lines in scrollback, want 4997", len(got))
	}
	for i, l := range got {
		if l != fmt.Sprint(i) {
			t.Fatalf("line %d is %q", i, l)
		}
	}
}

func TestLineRing(t *testing.T) {
	var r lineRing
	r.max = 3
	for _, l := range []string{"a", "b", "c", "d", "e"} {
		r.push(l)
	}
	if got := r.last(10, 1000); fmt.Sprint(got) != "[c d e]" {
		t.Fatalf("last 10: %v", got)
	}
	if got := r.last(2, 1000); fmt.Sprint(got) != "[d e]" {
		t.Fatalf("last 2: %v", got)
	}
	// The byte budget drops the oldest first.
	if got := r.last(3, 12); fmt.Sprint(got) != "[d e]" {
		t.Fatalf("budgeted: %v", got)
	}
	var none lineRing
	none.push("x")
	if none.len() != 0 || len(none.last(5, 100)) != 0 {
		t.Fatal("a ring of size 0 kept a line")
	}
}

func TestSnapshot(t *testing.T) {
	s := newScreen(ipc.TermSize{Cols: 20, Rows: 4}, 100)
	s.write([]byte("\x1b]2;my title\x07wide: 日本\r\n  indented   \r\n\x1b[?25l"))
	scr := s.snapshot(0)
	want := []string{"wide: 日本", "  indented", "", ""}
	if fmt.Sprint(scr.Lines) != fmt.Sprint(want) {
		t.Fatalf("lines %q, want %q", scr.Lines, want)
	}
	if scr.Title != "my title" || scr.Cursor.Visible || scr.Cursor.Y != 2 || scr.Cursor.X != 0 || scr.AltScreen {
		t.Fatalf("snapshot %+v", scr)
	}
	if scr.Size != (ipc.TermSize{Cols: 20, Rows: 4}) {
		t.Fatalf("size %v", scr.Size)
	}
}

// A repaint restores what a new viewer's terminal must know: the screen
// with its colours, the alternate screen, the modes and the cursor.
func TestRepaint(t *testing.T) {
	s := newScreen(ipc.TermSize{Cols: 20, Rows: 5}, 100)
	s.write([]byte("\x1b[?1049h\x1b[?1h\x1b[?2004h\x1b=\x1b[2;3H\x1b[1;32mgreen\x1b[0m\x1b]0;t\x1b\x07\x1b\\"))
	got := string(s.repaint())
	for _, want := range []string{"\x1b[?1049h", "\x1b[H\x1b[2J", "\x1b[2;1H", "green", "32", "\x1b[?1h", "\x1b[?2004h", "\x1b=", "\x1b[2;8H", "\x1b[?25h"} {
		if !strings.Contains(got, want) {
			t.Errorf("repaint %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "\x1b[?1000h") {
		t.Errorf("repaint turns on mouse reporting the program never asked for: %q", got)
	}
	// Turned off again, a mode is reset on the viewer.
	s.write([]byte("\x1b[?2004l\x1b>\x1b[?1049l"))
	got = string(s.repaint())
	if !strings.Contains(got, "\x1b[?2004l") || !strings.Contains(got, "\x1b>") || !strings.Contains(got, "\x1b[?1049l") {
		t.Errorf("repaint after the modes went off: %q", got)
	}
}

func TestAnsiSafe(t *testing.T) {
	if got := ansiSafe("a\x07b\x1b]c\u009cd\x9ce"); got != "ab]cde" {
		t.Fatalf("got %q", got)
	}
}

// Output faster than the emulator is dropped from the front: the screen
// shows the end of the burst, the scrollback says what is missing.
func TestScreenQueueSkips(t *testing.T) {
	s := newScreen(ipc.TermSize{Cols: 80, Rows: 5}, 100000)
	s.queue([]byte("kept before\r\n"))
	s.flush()
	var b strings.Builder
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&b, "burst line %d\r\n", i)
	}
	burst := b.String()
	for len(burst) > 0 {
		n := min(len(burst), 4096)
		s.queue([]byte(burst[:n]))
		burst = burst[n:]
	}
	if len(s.pending) > 2*maxPending {
		t.Fatalf("%d bytes pending, over the bound of %d", len(s.pending), 2*maxPending)
	}
	s.flush()
	if s.hasPending() {
		t.Fatal("output still pending after a flush")
	}
	scr := s.snapshot(100000)
	if scr.Lines[3] != "burst line 19999" {
		t.Fatalf("screen %q", scr.Lines)
	}
	sb := strings.Join(scr.Scrollback, "\n")
	if !strings.HasPrefix(sb, "kept before\n[") || !strings.Contains(sb, "bytes of output skipped here; the session log has them]\nburst line") {
		t.Fatalf("scrollback starts %q", sb[:min(len(sb), 200)])
	}
	// After the marker the lines follow each other without a gap.
	after := scr.Scrollback[2:]
	var first int
	if _, err := fmt.Sscanf(after[0], "burst line %d", &first); err != nil {
		t.Fatalf("first line after the marker: %q", after[0])
	}
	for i, l := range after {
		if l != fmt.Sprintf("burst line %d", first+i) {
			t.Fatalf("line %d after the marker is %q", i, l)
		}
	}
}

// A burst that ends in one long line, past what the emulator takes: the
// screen shows that line's tail, wrapped, above what follows it, as a
// terminal would, not only the note.
func TestScreenQueueSkipsALongLine(t *testing.T) {
	s := newScreen(ipc.TermSize{Cols: 80, Rows: 24}, 1000)
	long := strings.Repeat("x", 200000)
	for p := long + "\r\nEND\r\n"; len(p) > 0; {
		n := min(len(p), 4096)
		s.queue([]byte(p[:n]))
		p = p[n:]
	}
	s.flush()
	scr := s.snapshot(1000)
	full := 0
	for _, l := range scr.Lines {
		if l == strings.Repeat("x", 80) {
			full++
		}
	}
	if full < 20 || !slices.Contains(scr.Lines, "END") {
		t.Fatalf("the screen after a long line's burst has %d full rows of it, want 20 or more above END:\n%s", full, strings.Join(scr.Lines, "\n"))
	}
}

// The alternate screen costs one cell while unused, and has the terminal's
// size whenever the child is on it.
func TestAltScreenParked(t *testing.T) {
	s := newScreen(ipc.TermSize{Cols: 30, Rows: 6}, 100)
	if s.alt == nil || s.alt.Width() != 1 || s.alt.Height() != 1 {
		t.Fatalf("alternate screen not parked at start")
	}
	s.write([]byte("main text"))
	s.write([]byte("\x1b[?1049h\x1b[6;1Hbottom of alt"))
	if s.alt.Width() != 30 || s.alt.Height() != 6 {
		t.Fatalf("alternate screen is %dx%d on entry", s.alt.Width(), s.alt.Height())
	}
	scr := s.snapshot(0)
	if !scr.AltScreen || scr.Lines[5] != "bottom of alt" || scr.Lines[0] != "" {
		t.Fatalf("on the alternate screen: %q", scr.Lines)
	}
	s.resize(ipc.TermSize{Cols: 40, Rows: 8})
	if s.alt.Width() != 40 || s.alt.Height() != 8 {
		t.Fatalf("alternate screen is %dx%d after a resize on it", s.alt.Width(), s.alt.Height())
	}
	s.write([]byte("\x1b[?1049l"))
	if s.alt.Width() != 1 {
		t.Fatal("alternate screen not parked after leaving it")
	}
	scr = s.snapshot(0)
	if scr.AltScreen || scr.Lines[0] != "main text" || scr.Size != (ipc.TermSize{Cols: 40, Rows: 8}) || len(scr.Lines) != 8 {
		t.Fatalf("back on the main screen: %v %q", scr.Size, scr.Lines)
	}
	s.resize(ipc.TermSize{Cols: 50, Rows: 10})
	if s.alt.Width() != 1 {
		t.Fatal("a resize on the main screen unparked the alternate one")
	}
	// Titles and modes still arrive after the callbacks were set again.
	s.write([]byte("\x1b]2;still here\x07\x1b[?2004h\x1b[?1047h\x1b[?1047l"))
	if s.title != "still here" || !s.modes[2004] {
		t.Fatalf("callbacks lost: title %q, modes %v", s.title, s.modes)
	}
}

// A repaint states the scroll region a program set (its status line held
// still below), and the whole screen when it set none, the cursor where it
// was.
func TestRepaintKeepsTheScrollRegion(t *testing.T) {
	s := newScreen(ipc.TermSize{Cols: 40, Rows: 12}, 100)
	if top, bottom, ok := scrollRegion(s.main); !ok || top != 0 || bottom != 12 {
		t.Fatalf("scrollRegion of a fresh screen = %d, %d, %v; the emulator's layout changed", top, bottom, ok)
	}
	s.queue([]byte("\x1b[2J\x1b[10;1HSTATUS\x1b[1;5r\x1b[1;1Hline 1\r\nline 2"))
	s.flush()
	rp := string(s.repaint())
	if !strings.Contains(rp, "\x1b[1;5r") || strings.Index(rp, "\x1b[1;5r") > strings.LastIndex(rp, "\x1b[2;7H") {
		t.Errorf("the repaint does not set the scroll region before the cursor:\n%q", rp)
	}
	s.queue([]byte("\x1b[r"))
	s.flush()
	if rp := string(s.repaint()); !strings.Contains(rp, "\x1b[r") || strings.Contains(rp, "\x1b[1;5r") {
		t.Errorf("the repaint after the region was reset:\n%q", rp)
	}
}
