package term

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/daemon/cgroup/cgroupfs"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/state"
	"github.com/sessiond/sessiond/ipc"
)

// Timings of the holder.
const (
	// drainQuiet and drainMax bound how long output is still read after the
	// child exits: until the terminal has been quiet for drainQuiet, at most
	// drainMax (a background process may keep writing).
	drainQuiet = 50 * time.Millisecond
	drainMax   = time.Second
	// flushMax bounds how long viewers are given to take their last frames
	// and the exit status.
	flushMax = 2 * time.Second
	// compactAfter is how long the holder must have been quiet (no output,
	// no request) before it gives memory back and rests (see rest).
	compactAfter = 10 * time.Second
	// gcPercent is the collector's target while the holder works: low, so
	// that the heap stays near its live size.
	gcPercent = 50
	// helloTimeout bounds how long a new connection may take to say what
	// it wants.
	helloTimeout = 10 * time.Second
	// The emulator is fed once output has paused for emuQuiet, and at
	// least every emuMaxLag while it flows, unless output comes faster
	// than that keeps up with (see screen.queue): then only its end is
	// fed, once it pauses or someone looks at the screen.
	emuQuiet  = 20 * time.Millisecond
	emuMaxLag = 200 * time.Millisecond
)

// ready is the one line a holder writes on its stdout: its Info once the
// child runs, or why it could not start.
type ready struct {
	Info  *Info  `json:"info,omitempty"`
	Error string `json:"error,omitempty"`
}

// RunHolder is the holder mode of the sessiond binary. It reads the Spec as
// JSON from stdin, starts the command on a new pseudo-terminal, writes one
// line of JSON on stdout (the Info, or the error that stopped it) and points
// stdout at /dev/null, then serves the terminal until the command exits.
// It returns once the exit status is recorded and the viewers are told.
// The holder's own diagnostics go to stderr, which the daemon points at
// DiagName in the session directory.
func RunHolder(ctx context.Context, stdin io.Reader, stdout *os.File) error {
	tuneRuntime()
	// The child starts with SIGHUP and SIGINT at their default, whatever
	// the holder was started with; the holder ignores them once it runs.
	proc.DefaultSignalsForChildren()
	h, err := newHolder(stdin)
	if err != nil {
		_ = json.NewEncoder(stdout).Encode(ready{Error: err.Error()})
		return err
	}
	if err := json.NewEncoder(stdout).Encode(ready{Info: &h.info}); err != nil {
		h.abort()
		return fmt.Errorf("report readiness: %w", err)
	}
	quietStdio(stdout)
	releaseMemory()
	return h.run(ctx)
}

// tuneRuntime keeps the holder small: one P is plenty for a loop that
// mostly waits, and a low GC target keeps the heap near its live size.
func tuneRuntime() {
	// Nobody profiles a holder: no allocation is sampled, no stack kept.
	runtime.MemProfileRate = 0
	runtime.GOMAXPROCS(1)
	debug.SetGCPercent(gcPercent)
	debug.SetMemoryLimit(32 << 20)
}

// quietStdio points stdout at /dev/null once the daemon has read the ready
// line, so that the daemon's pipe is not held open.
func quietStdio(stdout *os.File) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer null.Close()
	_ = dupOnto(int(null.Fd()), int(stdout.Fd()))
}

// holder is one terminal holder. The state below mu is held by its loop,
// which serves the holder's events one at a time, and by its reader for
// each read of the terminal's output; other goroutines reach it only
// through ops, which the loop runs.
type holder struct {
	spec   Spec
	diag   *log.Logger
	master *os.File
	// slave stays open in the holder, so that a child that closes its
	// terminal does not make every read of the master fail at once.
	slave *os.File
	child *os.Process
	info  Info
	ln    *net.UnixListener
	sock  string

	ops       chan func()
	input     chan *inputJob
	childExit chan ipc.TermExit
	// finished is closed when the loop is done; connection goroutines then
	// stop waiting for it.
	finished chan struct{}

	// mu guards what follows. The reader hands each read of the terminal
	// to the log, the screen and the viewers itself, under mu, rather than
	// to the loop: a terminal holds a few KiB at most, and a read that
	// waits for the loop to run leaves the child waiting too. The log is
	// written in batches (see writeLog).
	mu sync.Mutex
	// logBuf is output not yet written to the log (see logBatch).
	logBuf []byte
	// done is set once the loop has finished: output is no longer taken.
	done    bool
	log     *logFile
	logErr  bool
	scr     *screen
	viewers map[*viewer]struct{}
	writer  *viewer
	waiters []chan ipc.TermExit
	exit    *ipc.TermExit
	hungUp  bool
	// compact fires compactAfter after work (output, a request) began;
	// work since it was armed (workSinceArm) arms it again, and a quiet
	// period gives memory back. resting: the collector is off until the
	// next work (see rest).
	compact      *time.Timer
	compactArmed bool
	workSinceArm bool
	resting      bool
	// emuTimer feeds the emulator what is pending; lastOutput and
	// pendingSince say when.
	emuTimer *time.Timer
	emuArmed bool
	// catchUpTimer repaints viewers that lagged (see catchUp).
	catchUpTimer *time.Timer
	catchUpArmed bool
	lastOutput   time.Time
	pendingSince time.Time
}

type inputJob struct {
	data []byte
	done chan error // nil: nobody waits (the emulator's replies)
	// deadline bounds the write (zero: none); what is not written by
	// then is not typed.
	deadline time.Time
	// state is jobQueued, then jobTaken by the writer or jobDropped by a
	// caller that stopped waiting first: a dropped job is not typed.
	state atomic.Int32
	n     int // written, for the caller once done
}

func newHolder(stdin io.Reader) (*holder, error) {
	spec, err := ReadSpec(stdin)
	if err != nil {
		return nil, err
	}
	spec = spec.withDefaults()
	h := &holder{
		spec:      spec,
		diag:      log.New(os.Stderr, fmt.Sprintf("holder[%d] ", os.Getpid()), log.LstdFlags|log.Lmicroseconds|log.LUTC),
		sock:      filepath.Join(spec.SessionDir, SocketName),
		ops:       make(chan func()),
		input:     make(chan *inputJob, 16),
		childExit: make(chan ipc.TermExit, 1),
		finished:  make(chan struct{}),
		viewers:   map[*viewer]struct{}{},
	}
	if err := h.setUp(); err != nil {
		h.abort()
		return nil, err
	}
	return h, nil
}

// setUp opens everything and starts the child; on error, abort undoes it.
func (h *holder) setUp() error {
	s := h.spec
	if err := state.EnsureDir(s.SessionDir); err != nil {
		return err
	}
	if err := removeStaleExit(s.SessionDir); err != nil {
		return err
	}
	ln, err := listen(h.sock)
	if err != nil {
		return err
	}
	h.ln = ln
	if h.log, err = openLog(s.LogPath, s.LogMaxSize, s.LogKeep); err != nil {
		return err
	}
	master, slave, err := pty.Open()
	if err != nil {
		return fmt.Errorf("open a pseudo-terminal: %w", err)
	}
	h.slave = slave
	if h.master, err = pollable(master); err != nil {
		master.Close()
		return err
	}
	if err := setWinsize(h.master, s.Size); err != nil {
		return fmt.Errorf("set the terminal size: %w", err)
	}
	h.scr = newScreen(s.Size, s.Scrollback)

	path, err := proc.LookPath(s.Argv[0], s.Dir, s.Env)
	if err != nil {
		return fmt.Errorf("start %s: %w", s.Argv[0], err)
	}
	attr := &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if c := s.Credential; c != nil {
		attr.Credential = c.Credential()
		// The user must own the terminal to open it by name (ssh, sudo
		// and the like do); its fds alone would not need that.
		if err := os.Chown(slave.Name(), int(c.UID), -1); err != nil {
			return fmt.Errorf("give the terminal to uid %d: %w", c.UID, err)
		}
	}
	var g *cgroupfs.Group
	if s.Cgroup != nil {
		if g, err = cgroupfs.Attach(s.Cgroup); err != nil {
			return fmt.Errorf("the session's cgroup: %w", err)
		}
	}
	var child *os.Process
	err = proc.InCgroup(g, cgroupfs.LeafCommand, attr, func() (err error) {
		child, err = os.StartProcess(path, s.Argv, &os.ProcAttr{
			Dir:   s.Dir,
			Env:   s.childEnv(),
			Files: []*os.File{slave, slave, slave},
			Sys:   attr,
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("start %s: %w", s.Argv[0], err)
	}
	h.child = child
	self := os.Getpid()
	holderStart, _ := proc.StartTime(self)
	childProc, _ := proc.Identify(child.Pid)
	h.info = Info{
		HolderPID:   self,
		HolderStart: holderStart,
		ChildPID:    child.Pid,
		ChildStart:  childProc.Start,
		ChildIno:    childProc.Ino,
		StartedAt:   time.Now().UTC(),
		BootID:      proc.BootID(),
		Socket:      h.sock,
	}
	go h.waitChild()
	if err := writeInfo(s.SessionDir, h.info); err != nil {
		return err
	}
	h.diag.Printf("started %s as pid %d on %s, %s", s.Argv[0], child.Pid, slave.Name(), s.Size)
	return nil
}

// abort undoes a setUp that failed half-way.
func (h *holder) abort() {
	if h.child != nil {
		_ = unix.Kill(-h.child.Pid, unix.SIGKILL)
		<-h.childExit
	}
	if h.ln != nil {
		_ = h.ln.Close()
	}
	if h.master != nil {
		_ = h.master.Close()
	}
	if h.slave != nil {
		_ = h.slave.Close()
	}
	if h.log != nil {
		_ = h.log.Close()
	}
}

// listen opens the holder's socket. A live holder on the path is an error; a
// socket left by a dead one is replaced.
func listen(path string) (*net.UnixListener, error) {
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("a terminal holder already serves %s", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale terminal socket: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// The peer-credential check guards the moment between bind and chmod.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("set terminal socket permissions: %w", err)
	}
	return ln, nil
}

// setWinsize sets the terminal's size through the poller-managed fd (asking
// for the raw fd would switch the master back to blocking mode).
func setWinsize(master *os.File, size ipc.TermSize) error {
	rc, err := master.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		serr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(size.Rows), Col: uint16(size.Cols)})
	})
	if err != nil {
		return err
	}
	return serr
}

func (h *holder) waitChild() {
	ws, err := waitProcess(h.child)
	ex := ipc.TermExit{PID: h.child.Pid, Code: -1, ExitedAt: time.Now().UTC()}
	switch {
	case err != nil:
		h.diag.Printf("%v", err)
		ex.Signal = "unknown"
	case ws.Signaled():
		ex.Signal = unix.SignalName(ws.Signal())
	default:
		ex.Code = ws.ExitStatus()
	}
	h.childExit <- ex
}

// run serves the terminal until the child has exited and everyone is told.
func (h *holder) run(ctx context.Context) error {
	// The holder ends when its child does, and only then can it record how:
	// a stray SIGTERM (an admin's pkill, a whole cgroup told to stop) must
	// not end it first. The child gets such signals on its own. SIGKILL
	// still works, and is reported as the holder's death. (Ignoring, unlike
	// Notify, keeps no thread waiting for signals.)
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)

	h.compact = time.NewTimer(compactAfter)
	h.compact.Stop()
	h.emuTimer = time.NewTimer(emuQuiet)
	h.emuTimer.Stop()
	h.catchUpTimer = time.NewTimer(lagRepaintEvery)
	h.catchUpTimer.Stop()
	go h.readOutput()
	go h.writeInput()
	go h.forwardReplies()
	go h.accept()
	h.loop(ctx)
	h.finish()
	return nil
}

// loop is the single owner of the screen, the log and the viewers.
func (h *holder) loop(ctx context.Context) {
	var drainQuietC, drainMaxC <-chan time.Time
	var quiet *time.Timer
	done := ctx.Done()
	for {
		select {
		case f := <-h.ops:
			h.mu.Lock()
			h.busy()
			f()
			h.mu.Unlock()
		case ex := <-h.childExit:
			h.mu.Lock()
			h.exit = &ex
			h.mu.Unlock()
			h.diag.Printf("child %d ended: %s", ex.PID, ex)
			quiet = time.NewTimer(drainQuiet)
			drainQuietC = quiet.C
			drainMaxC = time.After(drainMax)
		case <-drainQuietC:
			h.mu.Lock()
			left := drainQuiet - time.Since(h.lastOutput)
			h.mu.Unlock()
			if left <= 0 {
				return
			}
			quiet.Reset(left)
		case <-drainMaxC:
			return
		case <-h.compact.C:
			h.mu.Lock()
			rest := h.compactMemory()
			h.mu.Unlock()
			if rest {
				// Outside the lock: its sleeps hold up no output and no
				// request but the loop's own.
				releaseMemory()
			}
		case <-h.emuTimer.C:
			h.mu.Lock()
			h.feedEmulator(time.Now())
			h.mu.Unlock()
		case <-h.catchUpTimer.C:
			h.mu.Lock()
			h.catchUpAll(time.Now())
			h.mu.Unlock()
		case <-done:
			done = nil
			h.mu.Lock()
			h.hangUp("context cancelled")
			h.mu.Unlock()
		}
	}
}

// hangUp asks the child to end as a closed terminal would, and keeps
// serving until it does, so that its exit status is still recorded.
func (h *holder) hangUp(why string) {
	if h.exit != nil || h.hungUp {
		return
	}
	h.hungUp = true
	h.diag.Printf("%s: hanging up the terminal of %d", why, h.child.Pid)
	_ = unix.Kill(-h.child.Pid, unix.SIGHUP)
	_ = unix.Kill(-h.child.Pid, unix.SIGCONT)
}

// handleOutput takes one read of the terminal, under mu: it writes it to the
// log, queues it for the screen and offers it to the viewers. The payload
// is the reader's buffer; a viewer gets a frame of its own.
func (h *holder) handleOutput(payload []byte) {
	h.writeLog(payload)
	now := time.Now()
	h.scr.queue(payload)
	h.lastOutput = now
	if !h.emuArmed {
		h.emuArmed = true
		h.pendingSince = now
		h.emuTimer.Reset(emuQuiet)
	}
	var frame []byte
	if len(h.viewers) > 0 {
		frame = ipc.AppendTermFrame(make([]byte, 0, ipc.TermHeaderSize+len(payload)), ipc.TermFrameData, payload)
	}
	for v := range h.viewers {
		if v.lagged {
			// The repaint shows this frame's output already.
			h.catchUp(v, now)
			continue
		}
		if !v.offer(frame) {
			v.lagged = true
			v.drops++
			h.armCatchUp()
		}
	}
	h.busy()
}

// busy notes work (output, a request): it wakes a resting holder's
// collector, and arms the compaction that lets the holder rest again once
// it has been quiet for compactAfter.
func (h *holder) busy() {
	h.workSinceArm = true
	if h.compactArmed {
		return
	}
	h.compactArmed = true
	h.workSinceArm = false
	h.compact.Reset(compactAfter)
	if h.resting {
		h.resting = false
		debug.SetGCPercent(gcPercent)
	}
}

// catchUp repaints a viewer that lagged, whatever it missed, once its
// queue has room and lagRepaintEvery has passed since its last repaint;
// until then the catch-up timer stays armed, so that a viewer that lagged
// at the end of a burst is repainted with no more output to come.
func (h *holder) catchUp(v *viewer, now time.Time) {
	if v.hasRoomForRepaint() && now.Sub(v.lastRepaint) >= lagRepaintEvery {
		v.lastRepaint = now
		if v.offer(dataFrames(h.repaint())...) {
			v.lagged = false
			return
		}
	}
	h.armCatchUp()
}

func (h *holder) armCatchUp() {
	if !h.catchUpArmed {
		h.catchUpArmed = true
		h.catchUpTimer.Reset(lagRepaintEvery)
	}
}

// catchUpAll gives every lagging viewer its chance to catch up.
func (h *holder) catchUpAll(now time.Time) {
	h.catchUpArmed = false
	for v := range h.viewers {
		if v.lagged {
			h.catchUp(v, now)
		}
	}
}

// writeLog gives output to the session's log. It is written in pieces of
// up to logBatch, and at once whenever the terminal has paused (see
// readOutput), a viewer is attached or the screen is looked at: the log is
// behind the terminal only while output flows, by less than logBatch.
func (h *holder) writeLog(p []byte) {
	h.logBuf = append(h.logBuf, p...)
	if len(h.logBuf) >= logBatch || len(h.viewers) > 0 {
		h.flushLog()
	}
}

// flushLog writes what the log has been given so far.
func (h *holder) flushLog() {
	if len(h.logBuf) > 0 {
		h.writeLogNow(h.logBuf)
		h.logBuf = h.logBuf[:0]
	}
}

// writeLogNow writes to the session's log, saying once why it cannot until
// a write succeeds again.
func (h *holder) writeLogNow(p []byte) {
	if _, err := h.log.Write(p); err != nil {
		if !h.logErr {
			h.diag.Printf("session log: %v (reported once until a write succeeds)", err)
		}
		h.logErr = true
	} else {
		h.logErr = false
	}
}

// feedEmulator hands the emulator its pending output once output has
// paused, or has flowed for emuMaxLag without overflowing the queue.
func (h *holder) feedEmulator(now time.Time) {
	quiet, lag := now.Sub(h.lastOutput), now.Sub(h.pendingSince)
	if quiet < emuQuiet && h.scr.dropping() {
		// A flood: feeding its end now would only be done again.
		h.emuTimer.Reset(emuQuiet - quiet)
		return
	}
	if quiet < emuQuiet && lag < emuMaxLag {
		h.emuTimer.Reset(min(emuQuiet-quiet, emuMaxLag-lag))
		return
	}
	h.emuArmed = false
	h.scr.flush()
}

// screenNow brings the screen up to date with the output so far, for
// whoever needs to see it (a snapshot, a repaint, a resize).
func (h *holder) screenNow() *screen {
	h.flushLog()
	if h.scr.hasPending() {
		h.scr.flush()
	}
	return h.scr
}

func (h *holder) repaint() []byte { return h.screenNow().repaint() }

// compactMemory lets the holder rest once it has been quiet for a while;
// true if it does, and the caller then gives memory back (releaseMemory).
func (h *holder) compactMemory() bool {
	if h.workSinceArm {
		h.workSinceArm = false
		h.compact.Reset(compactAfter)
		return false
	}
	h.compactArmed = false
	h.flushLog()
	h.logBuf = nil
	h.rest()
	return true
}

// rest turns the collector off until the next work (busy), then gives
// memory back. A quiet holder allocates next to nothing, but the runtime
// still collects every two minutes, and each collection walks the stacks
// through the executable's tables: that faulted some 3 MiB of the
// executable back in (the kernel maps a faulting page's neighbours along
// with it), which releaseMemory had let go of, and took the idle holder
// from 4 MiB to over 7. The memory limit (tuneRuntime) still bounds the
// heap while the collector rests. The memory goes back after rest, once
// the holder's lock is let go (releaseMemory).
func (h *holder) rest() {
	h.resting = true
	debug.SetGCPercent(-1)
	h.scr.rest()
}

// writeInput is the one writer of the master, so that keystrokes, sends and
// the emulator's replies never interleave mid-write, and a child that does
// not read its input blocks only the callers that wait for their write.
func (h *holder) writeInput() {
	for {
		select {
		case job := <-h.input:
			if !job.state.CompareAndSwap(jobQueued, jobTaken) {
				continue
			}
			_ = h.master.SetWriteDeadline(job.deadline)
			n, err := h.master.Write(job.data)
			job.n = n
			if job.done != nil {
				job.done <- err
			}
		case <-h.finished:
			return
		}
	}
}

// typeInput writes to the terminal as if typed, and waits until it is
// written (or the holder is finishing). A viewer's keys wait as long as
// the program does not read them, as on any terminal.
func (h *holder) typeInput(data []byte) error {
	_, err := h.typeWithin(data, time.Time{})
	return err
}

// typeWithin is typeInput bounded by deadline (zero: none): what the
// program has not taken by then is not typed, now or later, and n says
// how much was. A program that does not read its input then holds up
// neither the caller nor the keys of a viewer behind it.
func (h *holder) typeWithin(data []byte, deadline time.Time) (n int, err error) {
	job := &inputJob{data: data, done: make(chan error, 1), deadline: deadline}
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case h.input <- job:
	case <-h.finished:
		return 0, errFinished
	case <-timeout:
		return 0, errNotReading
	}
	select {
	case err := <-job.done:
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = errNotReading
		}
		return job.n, err
	case <-h.finished:
		return 0, errFinished
	case <-timeout:
		// Queued behind input the program does not take: dropped, unless
		// its write began, which its own deadline ends.
		if job.state.CompareAndSwap(jobQueued, jobDropped) {
			return 0, errNotReading
		}
		err := <-job.done
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = errNotReading
		}
		return job.n, err
	}
}

// An inputJob's states.
const (
	jobQueued int32 = iota
	jobTaken
	jobDropped
)

// errNotReading is input the terminal's program did not take in time.
var errNotReading = errors.New("the terminal's program is not reading its input")

var errFinished = errors.New("the terminal's command has ended")

// forwardReplies drains the emulator's answers to the child's queries and
// gives them to the child, a writer attached or not: sessionctl attach
// keeps the queries from the viewer's terminal (an answer of its own
// would be typed into the session, whatever it asked for), so this
// terminal answers alone. A child that does not read its input gets its
// answers dropped rather than stall the emulator.
func (h *holder) forwardReplies() {
	buf := make([]byte, 4096)
	r := h.scr.replies()
	for {
		n, err := r.Read(buf)
		if err != nil {
			return
		}
		if n == 0 {
			continue
		}
		select {
		case h.input <- &inputJob{data: append([]byte(nil), buf[:n]...)}:
		default:
		}
	}
}

func (h *holder) setWriter(v *viewer) {
	h.writer = v
}

// call runs f in the loop and waits for it; false means the loop is gone.
func (h *holder) call(f func()) bool {
	done := make(chan struct{})
	select {
	case h.ops <- func() { f(); close(done) }:
		<-done
		return true
	case <-h.finished:
		return false
	}
}

// finish records the exit, tells every viewer and waiter, and closes the
// terminal, which hangs up whatever still runs on it.
func (h *holder) finish() {
	// From here on the state is finish's alone.
	h.mu.Lock()
	h.flushLog()
	h.done = true
	h.mu.Unlock()
	ex := *h.exit
	// The screen first: whoever finds the exit status finds it too (the
	// handoff's log tail is its last lines).
	if err := writeFinalScreen(h.spec.SessionDir, h.screenNow().snapshot(FinalScrollback)); err != nil {
		h.diag.Printf("record final screen: %v", err)
	}
	if err := writeExit(h.spec.SessionDir, ex); err != nil {
		h.diag.Printf("record exit status: %v", err)
	}
	close(h.finished)
	for _, w := range h.waiters {
		w <- ex
	}
	exitFrame, _ := json.Marshal(ex)
	frame := ipc.AppendTermFrame(nil, ipc.TermFrameExited, exitFrame)
	// Every viewer has until the same deadline to take the exit: a stuck
	// one's writes then fail and its sender drains, so that the frame
	// goes in and no viewer waits on another.
	deadline := time.Now().Add(flushMax)
	var full []*viewer
	for v := range h.viewers {
		_ = v.conn.SetWriteDeadline(deadline)
		v.queued.Add(int64(len(frame)))
		select {
		case v.q <- frame:
			close(v.q)
		default:
			full = append(full, v)
		}
	}
	for _, v := range full {
		v.q <- frame
		close(v.q)
	}
	for v := range h.viewers {
		<-v.sent
	}
	_ = h.ln.Close() // removes the socket
	for v := range h.viewers {
		v.conn.Close()
	}
	_ = h.master.Close()
	_ = h.slave.Close()
	_ = h.log.Close()
	h.diag.Printf("exit recorded; holder done")
}
