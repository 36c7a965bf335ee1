package term

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/sessiond/sessiond/ipc"
)

// restingInput leaves an emulator in a state a fresh one would not
// reproduce from the screen alone: colours of three kinds, underline
// styles, a hyperlink, wide and combined characters, a scroll region, a
// saved cursor, a pen left set, and a trip to the alternate screen.
var restingInput = []string{
	"\x1b[31mred\x1b[0m \x1b[38;5;202mindexed\x1b[0m \x1b[38;2;1;2;3;48;2;4;5;6mtrue\x1b[0m\r\n",
	"\x1b[4:3;58;5;9mcurly\x1b[0m \x1b[1;3;9mbold\x1b[0m \x1b]8;id=x;https://example.com/\x07link\x1b]8;;\x07\r\n",
	"wide 日本語 e\u0301 \U0001F44D\r\n",
	"\x1b[?1049hon the alternate screen\x1b[?1049l",
	"\x1b[3;6r\x1b[5;3H\x1b7\x1b[1;32mpen left green",
}

// restingMore relies on what restingInput left: it scrolls within the
// region, writes with the pen, returns to the saved cursor.
var restingMore = []string{
	"\x1b[6;1H" + strings.Repeat("scrolled in the region\n", 5),
	"\x1b8 after restore\x1b[0m plain",
	"\x1b[r\x1b[24;1H\r\nthe whole screen scrolls\r\n",
}

func restingPair(t *testing.T) (a, b *screen) {
	t.Helper()
	a = newScreen(ipc.TermSize{Cols: 40, Rows: 8}, 100)
	b = newScreen(ipc.TermSize{Cols: 40, Rows: 8}, 100)
	for _, p := range restingInput {
		a.write([]byte(p))
		b.write([]byte(p))
	}
	return a, b
}

// sameScreens fails unless the two screens' cells, cursors, scroll regions,
// scrollbacks and repaints are identical.
func sameScreens(t *testing.T, when string, a, b *screen) {
	t.Helper()
	a.wake()
	b.wake()
	ab, bb := screenBuffer(a.main), screenBuffer(b.main)
	if !reflect.DeepEqual(ab.Lines, bb.Lines) {
		for y := range ab.Lines {
			for x := range ab.Lines[y] {
				if !reflect.DeepEqual(ab.Lines[y][x], bb.Lines[y][x]) {
					t.Fatalf("%s: cell %d,%d is %#v, want %#v", when, x, y, ab.Lines[y][x], bb.Lines[y][x])
				}
			}
		}
		t.Fatalf("%s: the cells differ", when)
	}
	if a.main.Cursor() != b.main.Cursor() || a.main.ScrollRegion() != b.main.ScrollRegion() {
		t.Fatalf("%s: cursor %+v region %v, want %+v %v", when, a.main.Cursor(), a.main.ScrollRegion(), b.main.Cursor(), b.main.ScrollRegion())
	}
	if ar, br := string(a.repaint()), string(b.repaint()); ar != br {
		t.Fatalf("%s: repaint\n%q\nwant\n%q", when, ar, br)
	}
	if as, bs := a.snapshot(100), b.snapshot(100); !reflect.DeepEqual(as, bs) {
		t.Fatalf("%s: snapshot %+v, want %+v", when, as, bs)
	}
}

// A screen that rested is the screen that did not, and goes on as it
// would have, whichever use wakes it.
func TestRestingScreen(t *testing.T) {
	wakers := map[string]func(s *screen){
		"output": func(s *screen) {
			for _, p := range restingMore {
				s.queue([]byte(p))
			}
			s.flush()
		},
		"snapshot": func(s *screen) { s.snapshot(10) },
		"repaint":  func(s *screen) { s.repaint() },
		"resize":   func(s *screen) { s.resize(ipc.TermSize{Cols: 30, Rows: 6}) },
	}
	for name, wake := range wakers {
		t.Run(name, func(t *testing.T) {
			a, b := restingPair(t)
			a.rest()
			if a.resting == nil || screenBuffer(a.main).Lines != nil {
				t.Fatal("the screen did not rest")
			}
			wake(a)
			if a.resting != nil {
				t.Fatalf("%s did not wake the screen", name)
			}
			wake(b)
			sameScreens(t, "after "+name, a, b)
			// And again: a second rest, then more output.
			a.rest()
			for _, p := range restingMore {
				a.write([]byte(p))
				b.write([]byte(p))
			}
			sameScreens(t, "after a second rest", a, b)
		})
	}
}

// A screen rests on the alternate screen too, and comes back to both.
func TestRestingOnTheAlternateScreen(t *testing.T) {
	a, b := restingPair(t)
	for _, s := range []*screen{a, b} {
		s.write([]byte("\x1b[?1049h\x1b[2;2Hfull screen"))
	}
	a.rest()
	for _, s := range []*screen{a, b} {
		s.write([]byte("\x1b[?1049lback"))
	}
	sameScreens(t, "back from the alternate screen", a, b)
}

// A resting screen holds a small part of what its cells took.
func TestRestingScreenLetsGo(t *testing.T) {
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	const n = 4
	var screens [n]*screen
	before := heap()
	for i := range screens {
		screens[i] = newScreen(ipc.TermSize{Cols: 200, Rows: 50}, 100)
		for y := 0; y < 60; y++ {
			screens[i].write(fmt.Appendf(nil, "\x1b[3%dmline %d\x1b[0m of output\r\n", y%8, y))
		}
	}
	awake := heap() - before
	for _, s := range screens {
		s.rest()
	}
	rested := heap() - before
	runtime.KeepAlive(screens)
	t.Logf("%d screens of 200x50: %d KB awake, %d KB resting", n, awake>>10, rested>>10)
	if rested*5 > awake {
		t.Fatalf("resting screens hold %d bytes, awake %d", rested, awake)
	}
}
