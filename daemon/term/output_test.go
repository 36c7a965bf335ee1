package term

import (
	"bytes"
	"context"
	"io"
	stdlog "log"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// The log is written in batches while output flows, and at once whenever
// the terminal has nothing more to give: what a child printed before it
// waits is in the log without anyone looking at the screen.
func TestLogWrittenWhenOutputPauses(t *testing.T) {
	spec := testSpec(t, "/bin/sh", "-c", `echo first line; read x; echo second line; read y`)
	h := startHolder(t, spec)
	logHas := func(want string) func() bool {
		return func() bool {
			b, _ := os.ReadFile(spec.LogPath)
			return strings.Contains(string(b), want)
		}
	}
	waitFor(t, 5*time.Second, "the first line in the log", logHas("first line\r\n"))
	if err := h.Send(context.Background(), "", true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the second line in the log", logHas("second line\r\n"))
	_ = h.Send(context.Background(), "", true)
	waitExit(t, h)
}

// A flood reaches the log whole and in order, however the reads and the
// log's batches fall.
func TestFloodLogComplete(t *testing.T) {
	const n = 4 << 20
	spec := testSpec(t, "/bin/sh", "-c", `yes 'flood line' | head -c 4194304; echo; echo after the flood`)
	h := startHolder(t, spec)
	waitExit(t, h)
	var want bytes.Buffer
	for want.Len() < n {
		want.WriteString("flood line\n")
	}
	want.Truncate(n)
	want.WriteString("\nafter the flood\n")
	// The terminal ends each line with CR LF.
	wantLog := bytes.ReplaceAll(want.Bytes(), []byte("\n"), []byte("\r\n"))
	got, err := os.ReadFile(spec.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, wantLog) {
		i := 0
		for i < min(len(got), len(wantLog)) && got[i] == wantLog[i] {
			i++
		}
		t.Fatalf("log of %d bytes, want %d; they differ from byte %d: %q", len(got), len(wantLog), i, got[i:min(len(got), i+40)])
	}
}

// Output faster than the emulator keeps up with is fed to it once it
// pauses, not every emuMaxLag: only its end would be kept each time.
// Output that the queue holds whole is still fed every emuMaxLag.
func TestFloodFedOncePaused(t *testing.T) {
	h := &holder{scr: newScreen(ipc.TermSize{Cols: 80, Rows: 24}, 1000), emuTimer: time.NewTimer(time.Hour)}
	defer h.emuTimer.Stop()
	now := time.Now()
	line := []byte(strings.Repeat("x", 78) + "\r\n")
	for range 4 * maxPending / len(line) {
		h.scr.queue(line)
	}
	if !h.scr.dropping() {
		t.Fatal("the queue kept a flood whole")
	}
	h.lastOutput, h.pendingSince = now, now.Add(-time.Second)
	h.feedEmulator(now)
	if !h.scr.hasPending() {
		t.Fatal("a flood still flowing was fed to the emulator")
	}
	h.feedEmulator(now.Add(emuQuiet))
	if h.scr.hasPending() {
		t.Fatal("a flood that paused was not fed")
	}
	if got := strings.Count(strings.Join(h.scr.snapshot(1000).Scrollback, "\n"), "bytes of output skipped here"); got != 1 {
		t.Fatalf("%d notes of skipped output, want 1", got)
	}

	h.scr.queue([]byte("steady output\r\n"))
	h.lastOutput, h.pendingSince = now, now.Add(-emuMaxLag)
	h.feedEmulator(now)
	if h.scr.hasPending() {
		t.Fatal("output flowing for emuMaxLag, held whole, was not fed")
	}
}

// A quiet holder rests: once it has compacted, its collector is off until
// output or a request comes, so that the runtime's periodic collection does
// not fault the executable back in (see rest), and its screen's cells rest
// (see screen.rest). Output and requests turn it on again.
func TestQuietHolderRests(t *testing.T) {
	// As tuneRuntime sets it in a holder.
	defer debug.SetGCPercent(debug.SetGCPercent(gcPercent))
	gc := func() int {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p
	}
	log, err := openLog(filepath.Join(t.TempDir(), "output.log"), 1<<20, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	h := &holder{
		scr: newScreen(ipc.TermSize{Cols: 80, Rows: 24}, 100), log: log,
		diag: stdlog.New(io.Discard, "", 0),
		ops:  make(chan func()), childExit: make(chan ipc.TermExit, 1), finished: make(chan struct{}),
		compact: time.NewTimer(time.Hour), emuTimer: time.NewTimer(time.Hour), catchUpTimer: time.NewTimer(time.Hour),
	}
	h.compact.Stop()
	rest := func(what string) {
		t.Helper()
		h.mu.Lock()
		rested := h.compactMemory()
		h.mu.Unlock()
		if !rested {
			t.Fatalf("%s: the holder did not rest", what)
		}
		if p := gc(); p >= 0 {
			t.Fatalf("%s: the collector's target is %d, want it off", what, p)
		}
	}

	output := func(what, text string) {
		t.Helper()
		h.mu.Lock()
		h.handleOutput([]byte(text))
		h.mu.Unlock()
		if p := gc(); p != gcPercent {
			t.Fatalf("%s: the collector's target is %d, want %d", what, p, gcPercent)
		}
	}

	output("working", "$ ")
	rest("quiet after output")
	if h.scr.resting == nil {
		t.Fatal("a resting holder's screen kept its cells")
	}
	output("output after a rest", "more\r\n")
	h.mu.Lock()
	lines := h.screenNow().snapshot(0).Lines
	h.mu.Unlock()
	if lines[0] != "$ more" || h.scr.resting != nil {
		t.Fatalf("the screen after a rest and more output: %q (resting %v)", lines[:2], h.scr.resting != nil)
	}
	rest("quiet again")

	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		h.loop(context.Background())
	}()
	if !h.call(func() {}) {
		t.Fatal("the loop did not take the request")
	}
	if p := gc(); p != gcPercent {
		t.Fatalf("a request after a rest: the collector's target is %d, want %d", p, gcPercent)
	}
	h.childExit <- ipc.TermExit{PID: 1, Code: 0}
	<-loopDone
	h.compact.Stop()
	if h.workSinceArm || !h.compactArmed {
		t.Fatalf("a request did not arm the compaction (armed %v, work since %v)", h.compactArmed, h.workSinceArm)
	}
}
