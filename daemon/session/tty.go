package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/config"
	"github.com/sessiond/sessiond/daemon/logfile"
	"github.com/sessiond/sessiond/daemon/proc"
	"github.com/sessiond/sessiond/daemon/term"
	"github.com/sessiond/sessiond/ipc"
)

// A tty session's command runs on a terminal that a holder process owns
// (package term): the holder is the command's parent, copies its output
// into the session log, and records how it ended. The session learns of
// the end from the holder, reaches the command's process group itself for
// signals, and finds the holder again after a daemon restart.

// TerminalDeps say how tty sessions start their holders.
type TerminalDeps struct {
	// Executable is the sessiond binary run in holder mode; "" is this
	// program.
	Executable string
	// LogMaxSize and LogKeep are log_max_size and log_keep: the holder
	// rotates the log itself, by renaming, as the only writer.
	LogMaxSize int64
	LogKeep    int
}

// terminalLogWatcher is the OutputWatcher of a log that its writer rotates
// by renaming: watched for activity only, never rotated by the daemon.
type terminalLogWatcher interface {
	WatchTerminalLog(path string, onWrite func(time.Time)) (unwatch func())
}

// terminal is the holder of a tty session's terminal and what the session
// knows of it.
type terminal struct {
	holder *term.Holder
	// stopWait ends the wait for the command's exit (the session is left
	// to the next daemon).
	stopWait context.CancelFunc
	// died says the holder ended without recording the command's exit.
	died atomic.Bool
}

// holderStartTimeout bounds the start of a holder, up to its ready line.
const holderStartTimeout = 30 * time.Second

// ErrNoTerminal is returned for a terminal request to a session that runs
// without one.
var ErrNoTerminal = errors.New("session has no terminal")

// onTerminal reports whether the session's command runs on a terminal.
func (s *Session) onTerminal() bool { return s.spec.OnTerminal() || s.rec.TTY }

// spawnOnTerminal starts a holder with argv (the session's command, as
// prepared for its agent) on a new terminal, as the session's user, and
// returns the command as the child the session supervises.
func (s *Session) spawnOnTerminal(argv []string) (*proc.Child, error) {
	ctx, cancel := context.WithTimeout(s.startCtx, holderStartTimeout)
	defer cancel()
	spec := term.Spec{
		Argv: argv, Dir: s.projectDir, Env: s.env(), SessionDir: s.dir, LogPath: s.logPath(),
		LogMaxSize: s.deps.Terminal.LogMaxSize, LogKeep: rotatedKeep(s.deps.Terminal.LogKeep),
		Cgroup: s.cg.Record(),
	}
	spec.Credential = s.termCredential()
	h, err := term.Start(ctx, spec, term.StartOptions{Executable: s.deps.Terminal.Executable})
	if err != nil {
		return nil, fmt.Errorf("start the terminal of %s: %w", argv[0], err)
	}
	s.rec.TTY = true
	return s.attachHolder(h), nil
}

// attachHolder makes h the session's terminal and returns its command as
// a child whose end the holder reports.
func (s *Session) attachHolder(h *term.Holder) *proc.Child {
	info := h.Info()
	child, report := proc.Watched(proc.Process{PID: info.ChildPID, Start: info.ChildStart, Ino: info.ChildIno})
	ctx, cancel := context.WithCancel(context.Background())
	t := &terminal{holder: h, stopWait: cancel}
	s.term = t
	s.termP.Store(t)
	go s.waitTerminal(ctx, t, report)
	s.logger().Info("terminal holder", zap.Int("holder_pid", info.HolderPID), zap.Int("pid", info.ChildPID))
	return child
}

// waitTerminal reports the command's end as the holder recorded it, or as
// unknown when the holder died first. It runs on a goroutine of its own
// until then, or until ctx ends.
func (s *Session) waitTerminal(ctx context.Context, t *terminal, report func(proc.Exit)) {
	for {
		ex, err := t.holder.Wait(ctx)
		switch {
		case err == nil:
			report(proc.Exit{Code: ex.Code, Signal: ex.Signal})
			return
		case ctx.Err() != nil:
			return
		case errors.Is(err, term.ErrHolderDied):
			t.died.Store(true)
			s.logger().Error("terminal holder died", zap.Error(err))
			report(proc.Exit{Code: -1})
			return
		}
		// The holder runs but did not answer (out of connections, say):
		// ask again.
		s.logger().Warn("wait for the terminal's command", zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// exitReason is the end reason of a command that exited: crashed when its
// terminal holder died without saying how it ended, else by its exit code.
func (s *Session) exitReason(exit proc.Exit) Reason {
	if s.term != nil && s.term.died.Load() {
		s.warnRecord(fmt.Sprintf("the terminal holder (pid %d) died without recording how the command ended; the command got a hang-up", s.term.holder.Info().HolderPID))
		return Crashed
	}
	if s.oomReason(describeExit(exit)) {
		return OOM
	}
	s.limitAtExit(exit.Code)
	if a := s.rec.Agent; a != nil && a.State == ipc.AgentLimited && s.spec.LimitPolicy() != config.OnLimitIgnore {
		return Limit
	}
	return reasonOf(exit.Code)
}

// releaseTerminal stops waiting for the holder, which runs on for the next
// daemon to find.
func (s *Session) releaseTerminal() {
	if s.term != nil {
		s.term.stopWait()
	}
}

// signalGroup sends sig to the command's process group and, on a
// terminal, to the terminal's foreground group too: a shell runs its jobs
// in groups of their own, and the foreground one is what a person's key
// would reach.
func (s *Session) signalGroup(sig unix.Signal) error {
	err := s.child.SignalGroup(sig)
	if s.term != nil {
		err = errors.Join(err, s.child.SignalForeground(sig))
	}
	return err
}

// watchLog watches the session's log for activity: a tty session's log is
// rotated by its holder, so the daemon must only watch it.
func (s *Session) watchLog() func() {
	if s.onTerminal() {
		if w, ok := s.deps.Output.(terminalLogWatcher); ok {
			return w.WatchTerminalLog(s.logPath(), s.onOutput)
		}
	}
	return s.deps.Output.WatchLog(s.logPath(), s.onOutput)
}

// logTail is the end of the session's output for the handoff: for a tty
// session the last lines of its screen and scrollback (what a person would
// have seen), for any other the last lines of its log.
func (s *Session) logTail(n int) []string {
	if !s.onTerminal() {
		return s.deps.Output.Tail(s.logPath(), n)
	}
	if scr, err := term.ReadFinalScreen(s.dir); err == nil {
		return screenTail(scr, n)
	}
	// The holder died before it recorded the screen: the log, as text.
	var out []string
	for _, l := range s.deps.Output.Tail(s.logPath(), n) {
		if t := strings.TrimRight(term.StripString(l), " \n"); t != "" {
			out = append(out, strings.Split(t, "\n")...)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// screenTail is the last n lines of a screen and the scrollback above it,
// without the empty lines at the bottom.
func screenTail(scr ipc.TermScreen, n int) []string {
	lines := append(append([]string(nil), scr.Scrollback...), scr.Lines...)
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// Terminal returns the holder of a live tty session's terminal. A session
// without a terminal gets ErrNoTerminal; one that has ended, ErrEnded.
func (s *Session) Terminal() (*term.Holder, error) {
	rec := s.pub.Load()
	if !rec.TTY && !s.spec.OnTerminal() {
		return nil, ErrNoTerminal
	}
	if !ipc.Live(rec.State) {
		return nil, ErrEnded
	}
	t := s.termP.Load()
	if t == nil {
		return nil, fmt.Errorf("session %s is %s: its terminal is not ready: %w", s.id, rec.State, ErrNoTerminal)
	}
	return t.holder, nil
}

// FinalScreen returns the screen a tty session's command left when it
// ended.
func (s *Session) FinalScreen() (ipc.TermScreen, error) {
	if !s.pub.Load().TTY {
		return ipc.TermScreen{}, ErrNoTerminal
	}
	return term.ReadFinalScreen(s.dir)
}

// termCredential is who the holder runs the command as: the session's
// user's ids and groups, nil for the daemon's own.
func (s *Session) termCredential() *term.Credential {
	if s.owner == nil {
		return nil
	}
	return &term.Credential{UID: s.owner.UID, GID: s.owner.GID, Groups: s.owner.Groups}
}

// rotatedKeep is how many rotated logs the holder keeps for log_keep,
// which counts output.log too.
func rotatedKeep(logKeep int) int {
	if logKeep <= 0 {
		logKeep = logfile.DefaultKeep
	}
	return logKeep - 1
}
